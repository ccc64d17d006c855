/**
 * Every error the service answers with is one of these codes, so clients can branch on `error.code`
 * and the HTTP status always matches the contract (part 7).
 */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  MALFORMED_JSON: 400,
  UNAUTHENTICATED: 401,
  INVALID_API_KEY: 401,
  CUSTOMER_SESSION_REQUIRED: 401,
  FORBIDDEN: 403,
  INSUFFICIENT_ROLE: 403,
  READ_ONLY_KEY: 403,
  ACCESS_EXPIRED: 403,
  SECTION_FORBIDDEN: 403,
  NOT_FOUND: 404,
  ROUTE_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  IDEMPOTENCY_REQUEST_IN_PROGRESS: 409,
  PAYMENT_UNAVAILABLE: 409,
  PURCHASE_SESSION_REQUIRED: 409,
  PURCHASE_SESSION_SUPERSEDED: 409,
  PURCHASE_SESSION_EXPIRED: 409,
  PURCHASE_SESSION_BUSY: 409,
  HOLD_TOKEN_MISMATCH: 409,
  SALE_ALREADY_CHECKED_IN: 409,
  SALE_PAID_AT_GATEWAY: 409,
  OPEN_PAYMENT_CONFIRMATION_REQUIRED: 409,
  /** Check-in of a ticket already used at the door; details.checkedInAt says when. */
  TICKET_ALREADY_USED: 409,
  /** Cancel of a CONFIRMED sale paid through a gateway: the money must go back, so POST /sales/{id}/refund instead. */
  REFUND_REQUIRED: 409,
  /** Refund of a sale that has no gateway payment to return (not CONFIRMED, complimentary or paid offline). */
  SALE_NOT_REFUNDABLE: 409,
  QUEUE_REQUIRED: 409,
  MEMBERS_ONLY: 409,
  /** A membership signup by a buyer who is already an active member of that workspace. */
  ALREADY_MEMBER: 409,
  NOT_AVAILABLE: 409,
  EXTERNAL_SALE: 409,
  SALE_CLOSED: 409,
  MULTIPLE_ORGS: 409,
  MIXED_CURRENCY: 409,
  SEAT_NOT_AVAILABLE: 409,
  ADDON_SOLD_OUT: 409,
  ORDER_REJECTED: 409,
  INVALID_STATE: 409,
  ALREADY_EXISTS: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  VALIDATION_FAILED: 422,
  IDEMPOTENCY_KEY_REUSED: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  PROVIDER_UNAVAILABLE: 502,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** Codes whose cause is transient: the same request may succeed later without changes. */
const RETRYABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'IDEMPOTENCY_REQUEST_IN_PROGRESS',
  'PURCHASE_SESSION_BUSY',
  'RATE_LIMITED',
  'INTERNAL',
  'PROVIDER_UNAVAILABLE',
  'SERVICE_UNAVAILABLE',
]);

export interface ErrorBody {
  error: { code: ErrorCode; message: string; retryable: boolean; details: unknown };
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: unknown;
  readonly retryable: boolean;
  /** Extra response headers such as Retry-After. */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: unknown; retryable?: boolean; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = options.details ?? null;
    this.retryable = options.retryable ?? RETRYABLE.has(code);
    this.headers = options.headers ?? {};
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, retryable: this.retryable, details: this.details } };
  }
}

export const notFound = (what: string): AppError => new AppError('NOT_FOUND', `${what} was not found`);
