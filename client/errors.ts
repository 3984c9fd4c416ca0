/**
 * Typed errors of the client: one class per API error code (docs/contract.md,
 * "Authentication and errors"), so callers can `instanceof` what they handle, plus the errors of the worker.
 */

/**
 * Every code the server answers with (its list is functions/core/errors.ts ERROR_CODES; the client
 * keeps its own so it carries no server code, and test/client/error-codes.test.ts keeps the two equal).
 */
export const API_ERROR_CODES = [
  'INVALID_REQUEST',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'QUEUE_NOT_FOUND',
  'CONSUMER_NOT_FOUND',
  'MESSAGE_NOT_FOUND',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'STALE_RECEIPT',
  'CONFLICT',
  'STREAM_MOVED',
  'SQS_CREDENTIALS_UNAVAILABLE',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'OUTSIDE_RETENTION',
  'INVALID_RANGE',
  'QUOTA_EXCEEDED',
  'UNAVAILABLE',
  'INTERNAL',
] as const;

export type LeaseqErrorCode =
  | (typeof API_ERROR_CODES)[number]
  // A newer server may add codes; the client still surfaces them.
  | (string & {});

export interface ApiErrorInit {
  code: LeaseqErrorCode;
  status: number;
  message: string;
  details?: Record<string, unknown>;
  /** From the Retry-After header, in seconds. */
  retryAfterSeconds?: number;
}

/** A non-2xx answer of the API. */
export class LeaseqApiError extends Error {
  readonly code: LeaseqErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(init: ApiErrorInit) {
    super(init.message);
    this.name = new.target.name;
    this.code = init.code;
    this.status = init.status;
    this.details = init.details;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

export interface RequestIssue {
  path: string;
  message: string;
}

export class InvalidRequestError extends LeaseqApiError {
  /** Each problem with its JSON path. */
  get issues(): RequestIssue[] {
    return (this.details?.issues as RequestIssue[] | undefined) ?? [];
  }
}
export class UnauthenticatedError extends LeaseqApiError {}
export class ForbiddenError extends LeaseqApiError {}
export class QueueNotFoundError extends LeaseqApiError {}
export class MessageNotFoundError extends LeaseqApiError {}
/** `?consumer=<name>` names no Lambda consumer of the queue. */
export class ConsumerNotFoundError extends LeaseqApiError {}
export class NotFoundError extends LeaseqApiError {}
export class StaleReceiptError extends LeaseqApiError {}
export class PayloadTooLargeError extends LeaseqApiError {}
export class UnsupportedMediaTypeError extends LeaseqApiError {}
export class QuotaExceededError extends LeaseqApiError {}
export class UnavailableError extends LeaseqApiError {}
/** A replay window that starts before what the log keeps; `details.oldest_replayable` says where it may start. */
export class OutsideRetentionError extends LeaseqApiError {
  get oldestReplayable(): string | undefined {
    return this.details?.oldest_replayable as string | undefined;
  }
}

/** A usage range that is reversed, too long, or older than what is kept; `details` says the limits. */
export class InvalidRangeError extends LeaseqApiError {}

const CLASSES: Record<string, new (init: ApiErrorInit) => LeaseqApiError> = {
  INVALID_REQUEST: InvalidRequestError,
  UNAUTHENTICATED: UnauthenticatedError,
  FORBIDDEN: ForbiddenError,
  QUEUE_NOT_FOUND: QueueNotFoundError,
  CONSUMER_NOT_FOUND: ConsumerNotFoundError,
  MESSAGE_NOT_FOUND: MessageNotFoundError,
  NOT_FOUND: NotFoundError,
  STALE_RECEIPT: StaleReceiptError,
  PAYLOAD_TOO_LARGE: PayloadTooLargeError,
  UNSUPPORTED_MEDIA_TYPE: UnsupportedMediaTypeError,
  QUOTA_EXCEEDED: QuotaExceededError,
  UNAVAILABLE: UnavailableError,
  OUTSIDE_RETENTION: OutsideRetentionError,
  INVALID_RANGE: InvalidRangeError,
};

/** Codes for answers without leaseq's error body (API Gateway's own 413, 429, 502, 503...). */
const CODE_OF_STATUS: Record<number, LeaseqErrorCode> = {
  400: 'INVALID_REQUEST',
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'STALE_RECEIPT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'QUOTA_EXCEEDED',
  503: 'UNAVAILABLE',
};

/** Builds the typed error of an answer from its status, body text and Retry-After header. */
export function apiErrorOf(status: number, bodyText: string, retryAfter: string | null): LeaseqApiError {
  let body: Partial<{ error: Partial<ApiErrorInit>; message: string }> = {};
  try {
    body = JSON.parse(bodyText) ?? {};
  } catch {
    // Not JSON: a proxy's page; the status alone tells what happened.
  }
  const code = body.error?.code ?? CODE_OF_STATUS[status] ?? (status >= 500 ? 'INTERNAL' : `HTTP_${status}`);
  const init: ApiErrorInit = {
    code,
    status,
    message: body.error?.message ?? body.message ?? `HTTP ${status}`,
    ...(body.error?.details ? { details: body.error.details } : {}),
    ...(parseRetryAfter(retryAfter) !== undefined ? { retryAfterSeconds: parseRetryAfter(retryAfter) } : {}),
  };
  return new (CLASSES[code] ?? LeaseqApiError)(init);
}

/** Retry-After is delta-seconds or an HTTP date. */
function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - Date.now()) / 1000);
}

/** The request did not get an answer: connection refused or reset, DNS, or the client's timeout. */
export class LeaseqNetworkError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LeaseqNetworkError';
  }
}

/**
 * Thrown by a handler (a Worker's, or a Lambda consumer's: `leaseq/consumer` exports this class
 * too) for a message that no retry can fix (it cannot be parsed, it refers to something deleted):
 * it goes to the DLQ at once instead of using up its attempts (a Worker nacks it with
 * `retryable: false`).
 */
export class NonRetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

/**
 * Thrown by a handler (a Worker's or a Lambda consumer's) that knows when to try again (a rate
 * limit's Retry-After, a dependency down for a known while): its retry comes after `seconds`
 * instead of the queue's backoff tier (a Worker nacks it with `retry_after_seconds`). The attempt
 * counts as failed.
 */
export class RetryAfterError extends Error {
  constructor(
    readonly seconds: number,
    message = `retry after ${seconds} s`,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RetryAfterError';
  }
}

/**
 * Whether sending the same request again may succeed: throttling (429), an unavailable
 * service (503, and 502/504 from a gateway in front of it) and network failures. A 500 is a
 * bug in the server, and the other 4xx answer the same every time.
 */
export function isRetryable(err: unknown): boolean {
  if (err instanceof LeaseqNetworkError) return true;
  if (err instanceof LeaseqApiError) return [429, 502, 503, 504].includes(err.status);
  return false;
}
