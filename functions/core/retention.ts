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

/** What a dead letter's expiry is read from: its item's TTL (epoch s), else its death. */
export interface DeadFacts {
  dead_at?: number;
  ttl?: number;
}

/**
 * When a dead letter leaves the DLQ by itself (epoch ms): its item's own TTL, stamped at its death
 * with the DLQ retention of then and moved later only by a retention extension (operations/
 * dlq-retention.ts), so the listing, the storage buckets and DynamoDB's deletion agree on one time.
 * An item without one falls back to its death and the queue's retention.
 */
export function deadLetterExpiry(item: DeadFacts, config: Pick<QueueConfig, 'dlq_retention_hours'>): number {
  return item.ttl !== undefined
    ? item.ttl * 1000
    : (item.dead_at ?? 0) + config.dlq_retention_hours * 3_600_000;
}

/** TTL deletes late: a dead letter past its expiry is gone even while its item lingers. */
export function deadLetterLive(
  item: DeadFacts,
  config: Pick<QueueConfig, 'dlq_retention_hours'>,
  now: number,
): boolean {
  return deadLetterExpiry(item, config) > now;
}
