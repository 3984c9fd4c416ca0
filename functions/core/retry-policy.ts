import type { QueueConfig } from './config.js';

/** What happens after a failed attempt (docs/contract.md, "Guarantees"). */

export type FailureReason = 'nack' | 'lease_expired' | 'non_retryable';

export type Outcome =
  | { kind: 'retry'; nextAttempt: number; dueAt: number }
  | { kind: 'dead'; reason: FailureReason };

export interface Failure {
  /** The attempt that failed (1-based). */
  attempt: number;
  reason: FailureReason;
  /** A consumer's own delay for this retry, instead of the tier. */
  retryAfterSeconds?: number;
  now: number;
}

/** The delay before retry after `attempt` failed: its tier, the last tier past the end. */
export function backoffSeconds(config: Pick<QueueConfig, 'backoff_seconds'>, attempt: number): number {
  const tiers = config.backoff_seconds;
  return tiers[Math.min(attempt, tiers.length) - 1] ?? 0;
}

export function afterFailure(
  config: Pick<QueueConfig, 'backoff_seconds' | 'max_attempts'>,
  f: Failure,
): Outcome {
  if (f.reason === 'non_retryable') return { kind: 'dead', reason: 'non_retryable' };
  if (f.attempt >= config.max_attempts) return { kind: 'dead', reason: f.reason };
  const delay = f.retryAfterSeconds ?? backoffSeconds(config, f.attempt);
  return { kind: 'retry', nextAttempt: f.attempt + 1, dueAt: f.now + delay * 1000 };
}
