import { ApplicationFailure } from '@temporalio/activity';
import { sqlStateOf } from '../entities/database-errors.js';
import { DATABASE_REJECTED_FAILURE } from '../workflows/definitions.js';

/**
 * PostgreSQL errors that the same statement with the same data will hit again on every retry. Activities are
 * retried without a cap so that a database restart only delays a step; for these, retrying only delays the answer
 * (a buyer would wait out the whole reserve window for a 503), so they end the step at once.
 *
 * - class 22, data exception: a NUL byte in a jsonb string (22P05) or in text (22021), a number out of range…
 * - 23502 not-null and 23514 check violations: the row itself is wrong. Unique (23505) and foreign-key (23503)
 *   violations are left retryable: a concurrent step of the same sale commits first, and the retry finds its row.
 * - 08P01 protocol violation: what the server answers when a bound text parameter contains a NUL byte (measured
 *   with pg 8 through MikroORM 7: `invalid message format`, raised by `pq_getmsgend`); the same bytes are refused
 *   again. Connection failures proper (08000, 08003, 08006) stay retryable.
 */
export function isUnfixableByRetry(sqlState: string): boolean {
  return sqlState.startsWith('22') || sqlState === '23502' || sqlState === '23514' || sqlState === '08P01';
}

const textField = (error: unknown, name: string): string | null => {
  if (typeof error !== 'object' || error === null) return null;
  const value: unknown = Reflect.get(error, name);
  return typeof value === 'string' && value !== '' ? value : null;
};

/**
 * The non-retryable failure for an error no retry can fix, or null for any other error. The message and details name
 * the SQLSTATE and the schema objects only: the driver's own message and detail can quote the row (buyer data), and
 * failures are stored in workflow histories unencrypted.
 */
export function databaseRejection(error: unknown): ApplicationFailure | null {
  if (error instanceof ApplicationFailure) return null;
  const sqlState = sqlStateOf(error);
  if (!sqlState || !isUnfixableByRetry(sqlState)) return null;
  return ApplicationFailure.nonRetryable(
    `the database refused this data (SQLSTATE ${sqlState}); retrying cannot help`,
    DATABASE_REJECTED_FAILURE,
    {
      sqlState,
      table: textField(error, 'table'),
      column: textField(error, 'column'),
      constraint: textField(error, 'constraint'),
    },
  );
}

/** Runs a step's database work, turning errors no retry can fix into a non-retryable `DatabaseRejected` failure. */
export async function rejectUnfixableDatabaseErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw databaseRejection(error) ?? error;
  }
}
