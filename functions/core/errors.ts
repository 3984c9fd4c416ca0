/**
 * Typed errors with a stable `code`. The HTTP status of each lives here, in one place
 * (docs/contract.md, "Authentication and errors").
 */

/** Every code an error answer can carry: the contract's list (docs/openapi.json enumerates it). */
export const ERROR_CODES = [
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

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorIssue {
  path: string;
  message: string;
}

/** Marks leaseq's errors, whichever copy of this module made them (isLeaseqError). */
const LEASEQ_ERROR = Symbol.for('leaseq.error');

export class LeaseqError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly status: number,
    message: string,
    readonly details?: Record<string, unknown>,
    /** Seconds, sent as Retry-After. */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = new.target.name;
    Object.defineProperty(this, LEASEQ_ERROR, { value: true });
  }
}

/**
 * Whether `err` is one of leaseq's errors. A file the api loads on first use (the SQS endpoint)
 * carries its own copy of this module, whose class `instanceof` would not know.
 */
export function isLeaseqError(err: unknown): err is LeaseqError {
  return err instanceof LeaseqError || (typeof err === 'object' && err !== null && LEASEQ_ERROR in err);
}

export class InvalidRequestError extends LeaseqError {
  constructor(message: string, issues: ErrorIssue[] = []) {
    super('INVALID_REQUEST', 400, message, { issues });
  }
}

export class UnauthenticatedError extends LeaseqError {
  constructor(message = 'a valid API key is required: Authorization: Bearer <key>') {
    super('UNAUTHENTICATED', 401, message);
  }
}

export class ForbiddenError extends LeaseqError {
  constructor(scope: string) {
    super('FORBIDDEN', 403, `this API key lacks the scope ${scope}`, { required_scope: scope });
  }
}

export class QueueNotFoundError extends LeaseqError {
  constructor(queue: string) {
    super('QUEUE_NOT_FOUND', 404, `no queue named ${JSON.stringify(queue)}`);
  }
}

/** `?consumer=` naming a Lambda consumer the queue does not declare. */
export class ConsumerNotFoundError extends LeaseqError {
  constructor(queue: string, consumer: string) {
    super(
      'CONSUMER_NOT_FOUND',
      404,
      `queue ${JSON.stringify(queue)} has no consumer named ${JSON.stringify(consumer)}`,
    );
  }
}

/** A replay window that starts before what the log still keeps. */
export class OutsideRetentionError extends LeaseqError {
  constructor(message: string, oldest: string) {
    super('OUTSIDE_RETENTION', 400, message, { oldest_replayable: oldest });
  }
}

/** A time range the answer cannot cover (GET /usage): reversed, too long, or older than what is kept. */
export class InvalidRangeError extends LeaseqError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('INVALID_RANGE', 400, message, details);
  }
}

export class MessageNotFoundError extends LeaseqError {
  constructor(messageId: string) {
    super('MESSAGE_NOT_FOUND', 404, `no message with id ${JSON.stringify(messageId)}`);
  }
}

export class NotFoundError extends LeaseqError {
  constructor(message = 'no such route') {
    super('NOT_FOUND', 404, message);
  }
}

export class MethodNotAllowedError extends LeaseqError {
  constructor(method: string, path: string) {
    super('METHOD_NOT_ALLOWED', 405, `${method} is not allowed on ${path}`);
  }
}

export class StaleReceiptError extends LeaseqError {
  constructor() {
    super('STALE_RECEIPT', 409, 'the receipt belongs to an earlier delivery of this message');
  }
}

export class ConflictError extends LeaseqError {
  constructor(message: string) {
    super('CONFLICT', 409, message);
  }
}

/**
 * A queue's ranges are of another stream than the tenant file now puts it on (docs/streams.md,
 * "Moving a queue to another stream"): produce and admission refuse it until it moves back.
 */
export class StreamMovedError extends LeaseqError {
  constructor(queue: string, marked: string, stream: string) {
    super(
      'STREAM_MOVED',
      409,
      `queue ${queue}'s messages are on stream ${marked}, and the tenant file now puts it on ${stream}: ` +
        `it takes no messages until it is back on ${marked} (name its "shards" again for a stream of its own), ` +
        'or send them to a new queue',
    );
  }
}

/**
 * SQS credentials asked of a deployment that has no key to seal their secrets with
 * (RuntimeConfig.secrets): the request is refused before anything is made.
 */
export class SqsCredentialsUnavailableError extends LeaseqError {
  constructor() {
    super(
      'SQS_CREDENTIALS_UNAVAILABLE',
      409,
      'this deployment makes no SQS credentials: it has no key to seal their secrets with. ' +
        'Set "sqs_credentials": true in the tenant file and deploy (the key bills $1 a month)',
    );
  }
}

export class PayloadTooLargeError extends LeaseqError {
  constructor(message: string) {
    super('PAYLOAD_TOO_LARGE', 413, message);
  }
}

export class UnsupportedMediaTypeError extends LeaseqError {
  constructor() {
    super('UNSUPPORTED_MEDIA_TYPE', 415, 'send the body as content-type: application/json');
  }
}

export class QuotaExceededError extends LeaseqError {
  constructor(message: string, retryAfter: number) {
    super('QUOTA_EXCEEDED', 429, message, undefined, retryAfter);
  }
}

export class UnavailableError extends LeaseqError {
  constructor(message = 'the queue is busy, retry shortly', retryAfter = 1) {
    super('UNAVAILABLE', 503, message, undefined, retryAfter);
  }
}
