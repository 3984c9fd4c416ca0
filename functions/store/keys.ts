/**
 * The DynamoDB layout (docs/dynamodb-layout.md): item keys are built here, but for the rate
 * windows' (store/rate-windows.ts) and the sort keys that are data (an audit entry's or an event's
 * time, a run-time API key's name), which their adapters build. One table per tenant, string
 * keys `pk` / `sk`, TTL attribute `ttl` (garbage collection only: every read checks its own
 * expiry).
 */

export const TTL_ATTRIBUTE = 'ttl';

export interface ItemKey {
  pk: string;
  sk: string;
}

/** Producer dedup record of one message id: exists once the message is in the log. */
export function dedupKey(queue: string, messageId: string): ItemKey {
  return { pk: `Q#${queue}#D#${messageId}`, sk: 'D' };
}

/** The items of one message share a partition: state `S`, body `B`, history `H#<generation>`. */
export function messagePk(queue: string, messageId: string): string {
  return `Q#${queue}#M#${messageId}`;
}

export const STATE_SK = 'S';
export const BODY_SK = 'B';

export function historySk(generation: number): string {
  return `H#${String(generation).padStart(6, '0')}`;
}

/** A queue's storage counter: payload bytes held unconsumed, and the acked total (acks write it anyway). */
export function storageKey(queue: string): ItemKey {
  return { pk: `Q#${queue}#STORE`, sk: 'C' };
}

/** The bytes of a namespace's dead letters that expire in one hour (epoch hours, fixed width). */
export function deadBytesPk(namespace: string): string {
  return `Q#${namespace}#SX`;
}

export function deadBytesKey(namespace: string, hour: number): ItemKey {
  return { pk: deadBytesPk(namespace), sk: String(hour).padStart(10, '0') };
}

/** A long poll its caller called off (store/poll-cancels.ts). */
export function pollCancelKey(queue: string, pollId: string): ItemKey {
  return { pk: `Q#${queue}#POLL#${pollId}`, sk: 'X' };
}

/** Connections of the wake channel waiting for the queue's next admission (store/wake-registrations.ts). */
export function wakePk(queue: string): string {
  return `Q#${queue}#WAKE`;
}

/** The queue's long polls that took a place to wait in an epoch of the longest wait (core/long-polls.ts). */
export function waitingPollsKey(queue: string, epoch: number): ItemKey {
  return { pk: `Q#${queue}#WP`, sk: String(epoch) };
}

/** Where each shard's commit point was at the sweep's last look, and since when. */
export function commitMarksKey(namespace: string): ItemKey {
  return { pk: `Q#${namespace}#CM`, sk: 'M' };
}

/** Sharded counters of a queue's totals, so no one item takes every write. */
export const STATS_SHARDS = 8;
export function statsKey(queue: string, slot: number): ItemKey {
  return { pk: `Q#${queue}#T#${slot}`, sk: 'C' };
}

export const RECEIPT_SECRET_KEY: ItemKey = { pk: 'TENANT#RECEIPT_SECRET', sk: 'S' };

/** The sweep's arm (store/sweep-arm.ts); the table's stream wakes the sweep on its writes. */
export const SWEEP_ARM_KEY: ItemKey = { pk: 'TENANT#SWEEP', sk: 'ARM' };

/** Since when each busy-time fan-out stream has been quiet, an item a stream (store/fan-out-quiet.ts). */
export const FAN_OUT_QUIET_PK = 'TENANT#FANOUT';

/** The queues' breaching alarms, as the sweep last evaluated them (store/alarm-states.ts). */
export const ALARM_STATE_KEY: ItemKey = { pk: 'TENANT#ALARMS', sk: 'S' };

/**
 * The overloaded index `gsi1`: a message state item is in exactly one of these partitions,
 * by state, or in none once acked. Sort keys are fixed-width so they sort as numbers.
 */
export const GSI1 = 'gsi1';

export const gsi = {
  leased: (queue: string, shard: string) => `Q#${queue}#L#${shard}`,
  delayed: (queue: string, shard: string) => `Q#${queue}#D#${shard}`,
  dead: (queue: string) => `Q#${queue}#X`,
  /** Parked key states, by parked time. */
  parked: (queue: string) => `Q#${queue}#P`,
  /** Running redrive jobs. */
  redrives: (queue: string) => `Q#${queue}#RJ`,
  /** Running replay jobs. */
  replays: (queue: string) => `Q#${queue}#PJ`,
  retentions: (queue: string) => `Q#${queue}#TJ`,
};

export function seqSortKey(sequenceNumber: string): string {
  return sequenceNumber.padStart(64, '0');
}

export function timeSortKey(ms: number, messageId: string): string {
  return `${String(Math.max(0, Math.floor(ms))).padStart(15, '0')}#${messageId}`;
}

/** Message keys are arbitrary text: encoded so they can sit inside other keys unambiguously. */
export function encodeKey(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

export function decodeKey(encoded: string): string {
  return Buffer.from(encoded, 'base64url').toString('utf8');
}

/** Ordering state of one message key: who holds it, or that it is parked. */
export function keyStateKey(queue: string, key: string): ItemKey {
  return { pk: `Q#${queue}#K#${encodeKey(key)}`, sk: 'K' };
}

export function auditPk(queue: string): string {
  return `Q#${queue}#AUDIT`;
}

export function redriveKey(queue: string, redriveId: string): ItemKey {
  return { pk: `Q#${queue}#RD#${redriveId}`, sk: 'J' };
}

export function replayKey(queue: string, replayId: string): ItemKey {
  return { pk: `Q#${queue}#RP#${replayId}`, sk: 'J' };
}

export function retentionKey(queue: string, retentionId: string): ItemKey {
  return { pk: `Q#${queue}#RT#${retentionId}`, sk: 'J' };
}

/** Run-time API keys: the listing partition (sort key: name) and the item looked up by hash. */
export const API_KEYS_PK = 'TENANT#APIKEYS';

export function apiKeyHashKey(sha256: string): ItemKey {
  return { pk: `TENANT#APIKEY#${sha256}`, sk: 'K' };
}

/**
 * SQS credentials (store/sqs-credentials.ts): one item per access key id, all in one partition,
 * so the few a tenant has are listed (and an API key's found) with one query.
 */
export const SQS_CREDENTIALS_PK = 'TENANT#SQSCREDS';

export function sqsCredentialsKey(accessKeyId: string): ItemKey {
  return { pk: SQS_CREDENTIALS_PK, sk: accessKeyId };
}

/**
 * The lease layer (core/ranges.ts): a shard's ranges sort by the sequence number of their first
 * entry; its commit-point hint has a partition of its own so range queries never meet it.
 */
export function rangesPk(queue: string, shard: string): string {
  return `Q#${queue}#G#${shard}`;
}

export function rangeCursorKey(queue: string, shard: string): ItemKey {
  return { pk: `Q#${queue}#GC#${shard}`, sk: 'C' };
}

/** The stream a queue's ranges on a shard were admitted from, one partition a queue (store/stream-marks.ts). */
export function streamMarksPk(queue: string): string {
  return `Q#${queue}#LOG`;
}

export function streamMarkKey(queue: string, shard: string): ItemKey {
  return { pk: streamMarksPk(queue), sk: shard };
}

/** Small segments (the envelopes of one admitted batch) are items; large ones S3 objects. */
export function segmentKey(queue: string, shard: string, id: string): ItemKey {
  return { pk: `Q#${queue}#SEG#${shard}`, sk: seqSortKey(id) };
}

export function segmentObjectKey(queue: string, shard: string, id: string): string {
  return `segments/${queue}/${shard}/${seqSortKey(id)}.json`;
}

/** An ordered queue's Lambda consumer: a key's held messages, by log position (store/key-holds.ts). */
export function keyHoldPk(queue: string, key: string): string {
  return `Q#${queue}#KH#${encodeKey(key)}`;
}

export function keyHoldKey(queue: string, key: string, sequenceNumber: string): ItemKey {
  return { pk: keyHoldPk(queue, key), sk: seqSortKey(sequenceNumber) };
}

/** Per shard, one marker per key with held messages: what the sweep wakes. */
export function keyHoldsMarkerPk(queue: string, shard: string): string {
  return `Q#${queue}#KHS#${shard}`;
}

export function keyHoldsMarkerKey(queue: string, shard: string, key: string): ItemKey {
  return { pk: keyHoldsMarkerPk(queue, shard), sk: encodeKey(key) };
}

/** An ordered pull queue's blocked keys of one shard (store/key-blocks.ts). */
export function keyBlocksKey(queue: string, shard: string): ItemKey {
  return { pk: `Q#${queue}#KB#${shard}`, sk: 'B' };
}

/** A blocked key's attribute in its shard's blocks item. */
export function keyBlockAttribute(key: string): string {
  return `k${encodeKey(key)}`;
}

/** The last record of a shard the expiry watch counted (store/expiry-marks.ts). */
export function expiryMarkKey(queue: string, shard: string): ItemKey {
  return { pk: `Q#${queue}#EXP#${shard}`, sk: 'E' };
}

/** The last two samples of a queue's totals (store/totals-samples.ts). */
export function totalsSampleKey(queue: string): ItemKey {
  return { pk: `Q#${queue}#RATE`, sk: 'R' };
}

/** A queue's hourly usage rollups (store/usage-rollups.ts): its running totals at each hour's first sample. */
export function usageRollupPk(queue: string): string {
  return `Q#${queue}#USE`;
}

export function usageRollupKey(queue: string, hour: number): ItemKey {
  return { pk: usageRollupPk(queue), sk: String(hour).padStart(10, '0') };
}

/** A queue's controls: its pause, its purge mark (store/queue-controls.ts). */
export function queueControlsKey(queue: string): ItemKey {
  return { pk: `Q#${queue}#CTL`, sk: 'C' };
}

/** Queues of shared streams that dispatch passed over on a shard, one partition for the tenant (store/admission-lags.ts). */
export const ADMISSION_LAGS_PK = 'TENANT#LAGS';

export function admissionLagKey(queue: string, shard: string): ItemKey {
  return { pk: ADMISSION_LAGS_PK, sk: `${queue}#${shard}` };
}

/** What a queue's lease layer recorded of each closed shard of its stream (store/shard-marks.ts). */
export function shardMarksPk(queue: string): string {
  return `Q#${queue}#SH`;
}
