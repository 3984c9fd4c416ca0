/**
 * The handler's errors are the client's classes (client/errors.ts, which imports nothing), so a
 * team throws the same class from a Worker and from a Lambda consumer.
 */
export { NonRetryableError, RetryAfterError } from '../../client/errors.js';

/** By name, so the class of another copy of the package (another version installed beside) counts too. */
export function isNonRetryable(err: unknown): boolean {
  return err instanceof Error && err.name === 'NonRetryableError';
}

/** Retries wait at most this long, as a nack's `retry_after_seconds` may. */
const MAX_RETRY_AFTER_SECONDS = 12 * 3600;

/** The delay a RetryAfterError asks for (by name, as isNonRetryable). */
export function retryAfterOf(err: unknown): number | undefined {
  if (!(err instanceof Error) || err.name !== 'RetryAfterError') return undefined;
  const seconds = Number((err as { seconds?: unknown }).seconds);
  return Number.isFinite(seconds)
    ? Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(0, Math.ceil(seconds)))
    : undefined;
}
