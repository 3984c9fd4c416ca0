import type { QueueConfig } from './config.js';

/**
 * TTL values (epoch seconds) of a queue's items. TTL only collects garbage: every read also
 * checks state and times itself.
 */
export function retentionTtls(
  config: Pick<QueueConfig, 'retention_hours' | 'dlq_retention_hours'>,
  now: number,
) {
  const hours = (h: number) => Math.ceil(now / 1000 + h * 3600);
  return {
    /** An acked message's state item: long enough to answer a repeated ack and to trace it. */
    tombstoneTtl: hours(24),
    /** A dead message and its history: the DLQ retention. */
    deadTtl: hours(config.dlq_retention_hours),
    /** A body must outlive every place that can still point at it. */
    bodyTtl: hours(config.retention_hours + config.dlq_retention_hours),
  };
}

/** When a dead letter leaves the DLQ by itself (epoch ms): its DLQ retention from its death. */
export function deadLetterExpiry(deadAt: number, config: Pick<QueueConfig, 'dlq_retention_hours'>): number {
  return deadAt + config.dlq_retention_hours * 3_600_000;
}

/** TTL deletes late: a dead letter past the DLQ retention is gone even while its item lingers. */
export function deadLetterLive(
  deadAt: number | undefined,
  config: Pick<QueueConfig, 'dlq_retention_hours'>,
  now: number,
): boolean {
  return deadLetterExpiry(deadAt ?? 0, config) > now;
}
