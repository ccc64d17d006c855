/**
 * Which errors the API answers as "the database is unavailable" (503, retryable) rather than a 500: the classifier
 * behind it (entities/database-errors.ts), on errors shaped as MikroORM and pg throw them. The whole path, against a
 * database that really refuses connections and a pool that is really exhausted, is test/integration/
 * database-unavailable.test.ts.
 */
import { DriverException } from '@mikro-orm/core';
import { isDatabaseUnavailable } from '../../entities/database-errors.js';

const driverError = (message: string, code?: string) =>
  new DriverException(Object.assign(new Error(message), code ? { code } : {}));

test.each([
  ['a refused connection', driverError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
  ['a reset connection', driverError('read ECONNRESET', 'ECONNRESET')],
  ['a connection failure (class 08)', driverError('connection failure', '08006')],
  ['a server shutting down', driverError('terminating connection due to administrator command', '57P01')],
  ['a server that crashed', driverError('terminating connection due to crash of another server process', '57P02')],
  ['a server still starting', driverError('the database system is starting up', '57P03')],
  ['no connection slot left', driverError('sorry, too many clients already', '53300')],
  ['a connection that died under a query', driverError('Connection terminated unexpectedly')],
  ['a pool wait past the timeout', driverError('timeout exceeded when trying to connect')],
])('%s is the database being unavailable', (_, error) => {
  expect(isDatabaseUnavailable(error)).toBe(true);
});

test('a wrapped database error is judged through its cause', () => {
  const wrapped = new Error('could not load the sale', { cause: driverError('read ECONNRESET', 'ECONNRESET') });
  expect(isDatabaseUnavailable(wrapped)).toBe(true);
});

test.each([
  // A NUL byte in a bound parameter: the same data is refused again, so it is no outage (activities/db-errors.ts).
  ['a protocol violation (08P01)', driverError('invalid message format', '08P01')],
  ['a unique violation', driverError('duplicate key value violates unique constraint', '23505')],
  ['a data exception', driverError('invalid input syntax for type uuid', '22P02')],
  // Redis and Temporal sockets fail with the same errno; they are not the database.
  [
    'a refused socket outside the database driver',
    Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
  ],
  ['a plain error', new Error('Connection terminated unexpectedly')],
  ['no error at all', undefined],
])('%s is not', (_, error) => {
  expect(isDatabaseUnavailable(error)).toBe(false);
});
