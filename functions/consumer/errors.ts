/**
 * Thrown by a Lambda consumer's handler for a message that no retry can fix (it cannot be
 * parsed, it refers to something deleted): the message goes to the DLQ at once instead of
 * using up its attempts.
 */
export class NonRetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

/** By name, so the client SDK's class of the same name (`leaseq/client`) counts too. */
export function isNonRetryable(err: unknown): boolean {
  return err instanceof Error && err.name === 'NonRetryableError';
}

/**
 * Thrown by a handler that knows when to try again (a rate limit's Retry-After, a dependency
 * down for a known while): the attempt counts as failed, and its retry comes after `seconds`
 * instead of the queue's backoff tier.
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

/** Retries wait at most this long, as a nack's `retry_after_seconds` may. */
const MAX_RETRY_AFTER_SECONDS = 12 * 3600;

/** The delay a RetryAfterError asks for (by name, so the client SDK's class counts too). */
export function retryAfterOf(err: unknown): number | undefined {
  if (!(err instanceof Error) || err.name !== 'RetryAfterError') return undefined;
  const seconds = Number((err as { seconds?: unknown }).seconds);
  return Number.isFinite(seconds)
    ? Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(0, Math.ceil(seconds)))
    : undefined;
}
