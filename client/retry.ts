import { isRetryable, LeaseqApiError } from './errors.js';

/** The retry schedule the client and the worker apply around requests that may succeed later. */

export interface RetryPolicy {
  maxRetries: number;
  baseMs: number;
}

/** Backoff never grows past this, so a long outage still retries at a useful pace. */
const MAX_BACKOFF_MS = 20_000;

/**
 * How long to wait before retry number `retry` (0-based): the server's Retry-After when it
 * gave one, else exponential backoff with jitter, so many clients throttled together do not
 * come back in step.
 */
export function backoffMs(policy: RetryPolicy, retry: number, err?: unknown): number {
  if (err instanceof LeaseqApiError && err.retryAfterSeconds !== undefined) {
    return err.retryAfterSeconds * 1000;
  }
  const ceiling = Math.min(MAX_BACKOFF_MS, policy.baseMs * 2 ** retry);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** Resolves after `ms`, or as soon as `signal` aborts (the caller then checks the signal). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Runs `attempt` until it succeeds, fails with an error no retry can fix, or retries run out. */
export async function withRetries<T>(
  policy: RetryPolicy,
  signal: AbortSignal | undefined,
  attempt: () => Promise<T>,
): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await attempt();
    } catch (err) {
      if (retry >= policy.maxRetries || !isRetryable(err) || signal?.aborted) throw err;
      await sleep(backoffMs(policy, retry, err), signal);
      if (signal?.aborted) throw signal.reason;
    }
  }
}
