import { DriverException } from '@mikro-orm/core';

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** An error and the errors it wraps (`cause`), outermost first, as far as five deep. */
function* errorChain(error: unknown): Generator<object> {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    yield current;
    current = Reflect.get(current, 'cause');
  }
}

/**
 * The SQLSTATE of a database error: MikroORM's DriverException copies the pg driver's fields onto itself, `code`
 * among them, and a raw pg DatabaseError carries it too; wrappers are followed through `cause`.
 */
export function sqlStateOf(error: unknown): string | null {
  for (const link of errorChain(error)) {
    const code: unknown = Reflect.get(link, 'code');
    if (typeof code === 'string' && SQLSTATE.test(code)) return code;
  }
  return null;
}

/** Socket errors of a server that is down, restarting or unreachable. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * What the pg driver throws without any code: a connection that died under a query, one that failed before, and a
 * pool wait that outlasted `connectionTimeoutMillis` (DATABASE_CONNECT_TIMEOUT_MS).
 */
const CODELESS_CONNECTION_LOSS = [
  'Connection terminated',
  'not queryable',
  'timeout exceeded when trying to connect',
  'Connection timeout',
];

/**
 * The database could not serve this statement now, though the statement itself is fine: it refused or dropped the
 * connection (class 08), is shutting down, crashed or starting (57P01–57P03), has no connection slot left (53300), or
 * no pooled connection came free in time. A retry later can succeed. Only MikroORM's DriverException (what every query
 * through the ORM throws) and errors it wraps are judged: a Redis or Temporal socket error is not the database's.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  let fromDatabase = false;
  for (const link of errorChain(error)) {
    fromDatabase ||= link instanceof DriverException;
    if (!fromDatabase) continue;
    const code: unknown = Reflect.get(link, 'code');
    if (typeof code === 'string') {
      // 08P01 is no lost connection: the server refusing a NUL byte in a bound parameter (activities/db-errors.ts).
      const connectionLost = code.startsWith('08') && code !== '08P01';
      if (UNREACHABLE.has(code) || connectionLost || /^57P0[123]$/.test(code) || code === '53300') return true;
    }
    const message: unknown = Reflect.get(link, 'message');
    if (typeof message === 'string' && CODELESS_CONNECTION_LOSS.some((text) => message.includes(text))) return true;
  }
  return false;
}
