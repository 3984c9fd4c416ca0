import type { QueueConfig } from '../core/config.js';

/** The alarms' owners, thresholds and names (docs/alarms.md): the sweep's and the stack's alike. */

/**
 * Whose each alarm is, (docs/alarms.md, "Why these thresholds"): what consumers do (or fail to) is the
 * consuming team's; the stream not being read, records lost to the retention, or a tenant's
 * produce rate leaving its usual band (a noisy neighbour of the shared account), the platform's;
 * producers refused over the queue's quota, the producing team's.
 */
export const ALARM_OWNERS = {
  'redelivery-rate': 'consuming_team',
  'stale-receipt-rate': 'consuming_team',
  'handler-duration': 'consuming_team',
  'oldest-unacked-age': 'consuming_team',
  'dlq-oldest-age': 'consuming_team',
  'dlq-expiring': 'consuming_team',
  'dlq-expired': 'consuming_team',
  'ordered-stall': 'consuming_team',
  'parked-keys': 'consuming_team',
  'expired-unprocessed': 'platform',
  'sweep-silent': 'platform',
  'sweep-failing': 'platform',
  drift: 'platform',
  'iterator-age': 'platform',
  'write-throttled': 'platform',
  'produce-rate-anomaly': 'platform',
  'quota-throttled': 'producing_team',
} as const;

export type AlarmKind = keyof typeof ALARM_OWNERS;
export type AlarmOwner = (typeof ALARM_OWNERS)[AlarmKind];

/** The alarm kinds an owner's addresses hear. */
export function alarmsOf(owner: AlarmOwner): AlarmKind[] {
  return (Object.keys(ALARM_OWNERS) as AlarmKind[]).filter((k) => ALARM_OWNERS[k] === owner);
}

/** How a description names the owner. */
export const OWNER_LABEL: Record<AlarmOwner, string> = {
  consuming_team: 'For the consuming team',
  platform: 'For the platform team',
  producing_team: 'For the producing team',
};

/** Standard deviations above the produce rate's expected band that make it an anomaly. */
export const PRODUCE_ANOMALY_STD_DEVS = 3;

/** Redelivered over received above this share, in percent, for two minutes running. */
export const REDELIVERY_PERCENT = 10;

/** Below this many deliveries a minute the rate is noise (one redelivery of three is 33 %). */
export const REDELIVERY_MIN_RECEIVED = 10;

/** Stale receipts over the receipts consumers sent back (ack, nack, stale), above this share in percent, two minutes running. */
export const STALE_RECEIPT_PERCENT = 5;

/** Below this many receipts a minute the share is noise. */
export const STALE_RECEIPT_MIN = 10;

/**
 * An ordered queue whose oldest unacked message is older than this is stalled behind one key (a
 * poison message on its retries, a handler stuck on it): its shard's later keys wait too.
 */
export const ORDERED_STALL_SECONDS = 300;

/** Before a dead letter's retention ends, this long: time to extend the retention or redrive. */
export const DLQ_EXPIRY_WARNING_SECONDS = 86_400;

/** The age of the oldest dead letter that warns of its expiry, or none when the retention is a day or less. */
export function dlqExpiringSeconds(queue: Pick<QueueConfig, 'dlq_retention_hours'>): number | undefined {
  const seconds = queue.dlq_retention_hours * 3600 - DLQ_EXPIRY_WARNING_SECONDS;
  return seconds > 0 ? seconds : undefined;
}

/** The name a tier exception's expiry is published under (it is a schedule, not an alarm). */
export const EXCEPTION_EXPIRED = 'exception-expired';

/**
 * The age (of the oldest unacked message, or of the oldest record no reader has taken from the
 * stream) past which a queue is half-way to losing messages: Kinesis trims a record at the
 * retention, so half of it leaves the owner at least 12 h (the shortest retention is 24 h) to act.
 */
export function backlogAgeLimitSeconds(queue: Pick<QueueConfig, 'retention_hours'>): number {
  return (queue.retention_hours * 3600) / 2;
}

/**
 * `leaseq-<tenant>/<queue>/<alarm>`. Tenant and queue names are `[a-z0-9-]`, so the slashes keep
 * tenant `a` queue `b-c` and tenant `a-b` queue `c` apart (alarm names are unique per account).
 */
export function alarmName(tenant: string, queue: string, alarm: string): string {
  return `leaseq-${tenant}/${queue}/${alarm}`;
}

/**
 * Handlers that ran past half their lease, above this share in percent of those that finished: the
 * p99 of their run times passed half the lease.
 */
export const SLOW_HANDLED_PERCENT = 1;

/**
 * Handlers that ran past half their lease (the handler-duration alarm's count), counted by the api
 * and the Lambda consumer as they finish.
 */
export function slowHandlers(heldSeconds: readonly number[], leaseSeconds: number): number {
  return heldSeconds.filter((s) => s > leaseSeconds / 2).length;
}
