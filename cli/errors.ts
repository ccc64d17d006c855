/**
 * What the command-line client tells a person when a command cannot finish. The message is one line, printed on
 * stderr as is; the exit code is 1 for a refusal or failure and 2 for a command typed wrong, as scripts/operator.ts
 * does, so a script can tell "fix the command" from "the service said no".
 */
export class CliError extends Error {
  readonly exitCode: number;

  constructor(message: string, options: { exitCode?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CliError';
    this.exitCode = options.exitCode ?? 1;
  }
}

export class UsageError extends CliError {
  constructor(message: string) {
    super(message, { exitCode: 2 });
    this.name = 'UsageError';
  }
}

/** What every command says when no key is stored, and when the service refuses the stored one (contract 5.2: 401). */
export const NOT_LOGGED_IN = 'Not logged in: run `ticketing login`';
export const KEY_REFUSED = 'The service refused the stored key (expired or revoked?): run `ticketing login`';

/** The message of anything thrown; duck-typed, as errors from Node's internals may come from another realm. */
export function messageOf(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'message' in error && typeof error.message === 'string') {
    return error.message;
  }
  return String(error);
}

/** A short reason out of whatever a failed `fetch` threw (undici puts the useful part in `cause`). */
export function networkReason(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    if ('name' in error && error.name === 'TimeoutError') return 'the request timed out';
    if ('cause' in error && error.cause) {
      const cause = messageOf(error.cause);
      if (cause) return cause;
    }
  }
  return messageOf(error);
}
