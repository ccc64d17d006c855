/**
 * The one error every provider client throws. Callers (activities) decide what to do from three facts only:
 * which provider failed, the HTTP status it answered with (null when no answer arrived: timeout, refused
 * connection, SMTP transport failure) and whether repeating the same call may succeed.
 */
export type ProviderName = 'gateway-a' | 'gateway-b' | 'seatmap' | 'mail';

export interface ProviderErrorInit {
  provider: ProviderName;
  status: number | null;
  retryable: boolean;
  /** The provider's own error code when its body carried one (e.g. `ILLEGAL_STATUS_CHANGE`), or ours (`TIMEOUT`). */
  code?: string | null;
  message: string;
  /** The provider's parsed error body, for callers that need more than the code (seat labels in a conflict). */
  details?: unknown;
  /** How long the provider asked callers to wait (its Retry-After on a 429 or 503), in ms; null when it did not say. */
  retryAfterMs?: number | null;
  cause?: unknown;
}

export class ProviderError extends Error {
  override readonly name = 'ProviderError';
  readonly provider: ProviderName;
  readonly status: number | null;
  readonly retryable: boolean;
  readonly code: string | null;
  readonly details: unknown;
  readonly retryAfterMs: number | null;

  constructor(init: ProviderErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.provider = init.provider;
    this.status = init.status;
    this.retryable = init.retryable;
    this.code = init.code ?? null;
    this.details = init.details ?? null;
    this.retryAfterMs = init.retryAfterMs ?? null;
  }
}

export const isProviderError = (error: unknown): error is ProviderError => error instanceof ProviderError;

/** 408, 425, 429 and every 5xx are worth another try; other 4xx mean the request itself is wrong. */
export const isRetryableStatus = (status: number): boolean =>
  status >= 500 || status === 408 || status === 425 || status === 429;

/** A Retry-After header (delay seconds or an HTTP date) in ms from `now`; null when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number = Date.now()): number | null {
  if (header === null || header.trim() === '') return null;
  const value = header.trim();
  if (/^[0-9]+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
