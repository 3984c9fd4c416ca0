import * as z from 'zod/mini';
import { intIn } from '../core/zod-mini.js';
import { attributesSchema, rateLimitsSchema } from './fields.js';

/**
 * What the HTTP API answers (docs/contract.md, docs/http-api.md): the client's types are inferred
 * from these, the produce and consume services answer in their types, and docs/openapi.json
 * documents them. The server does not parse its own answers, so these are `z.lazy` and only the
 * OpenAPI generator (a file loaded on first use) builds them. Objects are `z.object`, not strict: a
 * client keeps working when an answer gains a field.
 */

/** An ISO 8601 time, documented by its format alone: the server writes these, nothing parses them. */
const time = () => z.string().register(z.globalRegistry, { format: 'date-time' });
const count = () => intIn(0);
const seconds = () => z.number().check(z.minimum(0));
const byName = () => z.record(z.string(), z.number());

export const produceResultSchema = z.lazy(() =>
  z.object({
    message_id: z.string(),
    status: z.enum(['accepted', 'duplicate', 'failed']),
    /** Set when `failed`; `retryable: false` fails again as sent (a payload its schema refuses). */
    error: z.optional(z.object({ code: z.string(), message: z.string(), retryable: z.boolean() })),
  }),
);

/** One result per message, in the request's order. */
export const produceResponseSchema = z.lazy(() => z.object({ results: z.array(produceResultSchema) }));

export const deliveredMessageSchema = z.lazy(() =>
  z.object({
    message_id: z.string(),
    receipt: z.string(),
    key: z.nullable(z.string()),
    payload: z.unknown(),
    headers: z.record(z.string(), z.string()),
    /** 1 on the first delivery. */
    attempt: intIn(1),
    enqueued_at: time(),
    lease_expires_at: time(),
    /** Typed attributes, as the producer (or an SQS client's MessageAttributes) gave them. */
    attributes: z.optional(attributesSchema),
    /** The version of the queue's payload schema the payload was checked against. */
    schema_ref: z.optional(z.string()),
    /** The producer's W3C trace context. */
    traceparent: z.optional(z.string()),
    /** Set on a replay's copy, its retries and its redrives: the replay's id. */
    replay_id: z.optional(z.string()),
  }),
);

export const receiveResponseSchema = z.lazy(() => z.object({ messages: z.array(deliveredMessageSchema) }));

export const ackResultSchema = z.lazy(() =>
  z.object({ receipt: z.string(), status: z.enum(['acked', 'stale_receipt', 'invalid_receipt']) }),
);

export const ackResponseSchema = z.lazy(() => z.object({ results: z.array(ackResultSchema) }));

export const nackResultSchema = z.lazy(() =>
  z.object({
    status: z.enum(['retry_scheduled', 'dead_lettered']),
    attempt: intIn(1),
    next_attempt_at: z.optional(time()),
  }),
);

export const extendResultSchema = z.lazy(() =>
  z.object({ lease_expires_at: time(), max_lease_expires_at: time() }),
);

/** A queue the key has a scope on, with what it may do there. */
export const queueInfoSchema = z.lazy(() =>
  z.object({
    name: z.string(),
    ordered: z.boolean(),
    shards: intIn(1),
    /** Its Lambda consumers' names; told only to a key with `admin` on the queue. */
    consumers: z.array(z.string()),
    /** What a key may do needs its scope `<action>:<queue>` (or `<action>:*`). */
    actions: z.array(z.enum(['produce', 'consume', 'admin'])),
  }),
);

export const queuesResponseSchema = z.lazy(() => z.object({ queues: z.array(queueInfoSchema) }));

/** A pause of a queue's deliveries: when, by which key, and why. */
export const queuePauseSchema = z.lazy(() =>
  z.object({ paused_at: time(), actor: z.string(), reason: z.string() }),
);

export const pauseResponseSchema = z.lazy(() => z.object({ paused: queuePauseSchema }));
export const resumeResponseSchema = z.lazy(() => z.object({ resumed: queuePauseSchema }));

export const queueStatsSchema = z.lazy(() =>
  z.object({
    depth: count(),
    in_flight: count(),
    delayed: count(),
    /** Ordered queues: messages waiting in their keys' hold areas (0 on other queues). */
    held: count(),
    dlq_depth: count(),
    parked_keys: count(),
    oldest_unacked_age_seconds: seconds(),
    oldest_unacked_age_seconds_by_shard: byName(),
    /** How long a shard's oldest unfinished message has held its commit point (a poison head). */
    commit_stalled_seconds: seconds(),
    commit_stalled_seconds_by_shard: byName(),
    /**
     * The stream's shards with their parents: `open`; `draining`, closed by a reshard while the
     * queue still has something of it; `finished`, nothing of it holds a key back.
     */
    shards: z.array(
      z.object({
        id: z.string(),
        state: z.enum(['open', 'draining', 'finished']),
        parents: z.array(z.string()),
      }),
    ),
    dlq_oldest_age_seconds: seconds(),
    produced_total: count(),
    acked_total: count(),
    redelivered_total: count(),
    stale_receipts_total: count(),
    expired_unprocessed_total: count(),
    /** Payload bytes held against `storage_quota_bytes`: a push queue's slowest consumer's. */
    stored_bytes: count(),
    /** Push queues: what each Lambda consumer has not finished. */
    stored_bytes_by_consumer: z.optional(byName()),
    storage_quota_bytes: count(),
    /** Requests refused over a quota (429), in all and by the name of the API key refused. */
    throttled_total: count(),
    throttled_by_key: byName(),
    /** Set while an admin paused the queue's deliveries. */
    paused: z.nullable(queuePauseSchema),
    /** Whether the unacked backlog shrinks, at the produce and ack rates of the last minute. */
    drain: z.object({
      state: z.enum(['empty', 'draining', 'not_draining', 'unknown']),
      /** At the last minute's rates; null unless draining (0 when empty). */
      eta_seconds: z.nullable(seconds()),
      produce_per_second: z.nullable(seconds()),
      ack_per_second: z.nullable(seconds()),
    }),
  }),
);

/** A Lambda consumer's own figures (`stats` with `?consumer=`). */
export const consumerStatsSchema = z.lazy(() =>
  z.object({
    consumer: z.string(),
    ready: count(),
    in_flight: count(),
    delayed: count(),
    held: count(),
    dlq_depth: count(),
    parked_keys: count(),
    dlq_oldest_age_seconds: seconds(),
    nacked_total: count(),
    dead_lettered_total: count(),
    expired_unprocessed_total: count(),
    commit_stalled_seconds: seconds(),
  }),
);

/** GET /queues/{q}/stats: the queue's figures, or a Lambda consumer's with `?consumer=`. */
export const statsResponseSchema = z.lazy(() => z.union([queueStatsSchema, consumerStatsSchema]));

export const failedAttemptSchema = z.lazy(() =>
  z.object({
    attempt: intIn(1),
    consumer_id: z.nullable(z.string()),
    reason: z.enum(['nack', 'lease_expired', 'non_retryable']),
    error: z.nullable(z.string()),
    delivered_at: time(),
    failed_at: time(),
  }),
);

/** Dead letters that failed the same way last. */
export const deadLetterGroupSchema = z.lazy(() =>
  z.object({
    /** The last attempt's error text (its first 200 characters), or its reason in parentheses. */
    error: z.string(),
    count: intIn(1),
    first_dead_at: time(),
    last_dead_at: time(),
    sample_message_id: z.string(),
  }),
);

export const deadLetterGroupsSchema = z.lazy(() =>
  z.object({
    /** Largest first. */
    groups: z.array(deadLetterGroupSchema),
    /** Dead letters read (the oldest 10,000 at most). */
    grouped: count(),
    /** Whether there were more than were read. */
    truncated: z.boolean(),
  }),
);

/** What a delivery carries of the envelope beyond its payload, when the producer gave it. */
const deliveryContext = () => ({
  /** The version of the queue's payload schema the payload was checked against. */
  schema_ref: z.optional(z.string()),
  /** The producer's W3C trace context. */
  traceparent: z.optional(z.string()),
  /** Set on a replay's copy, its retries and its redrives: the replay's id. */
  replay_id: z.optional(z.string()),
});

export const deadLetterSchema = z.lazy(() =>
  z.object({
    message_id: z.string(),
    key: z.nullable(z.string()),
    payload: z.unknown(),
    headers: z.record(z.string(), z.string()),
    enqueued_at: time(),
    dead_at: time(),
    attempts: z.array(failedAttemptSchema),
    ...deliveryContext(),
  }),
);

export const dlqPageSchema = z.lazy(() =>
  z.object({ messages: z.array(deadLetterSchema), next_cursor: z.nullable(z.string()) }),
);

/** The error body every non-2xx answer carries; `code` is one of core/errors.ts ERROR_CODES. */
export const errorBodySchema = z.lazy(() =>
  z.object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      details: z.optional(z.record(z.string(), z.unknown())),
    }),
  }),
);

const jobStatus = () => z.enum(['running', 'done', 'cancelled']);

export const redriveSchema = z.lazy(() =>
  z.object({
    redrive_id: z.string(),
    status: jobStatus(),
    moved: count(),
    remaining: count(),
    rate_per_sec: z.number(),
  }),
);

export const redriveMatchingSchema = z.lazy(() => z.object({ matching: count() }));

export const retentionSchema = z.lazy(() =>
  z.object({
    retention_id: z.string(),
    status: jobStatus(),
    dlq_retention_hours: count(),
    reason: z.string(),
    /** Dead letters kept longer, and those already kept at least as long, of `total`. */
    extended: count(),
    unchanged: count(),
    total: count(),
    rate_per_sec: z.number(),
  }),
);

export const replaySchema = z.lazy(() =>
  z.object({
    replay_id: z.string(),
    status: jobStatus(),
    from: time(),
    to: time(),
    replayed: count(),
    scanned: count(),
    shards: count(),
    shards_done: count(),
    rate_per_sec: z.number(),
  }),
);

/** An ordered queue's key held behind a dead message. */
export const parkedKeySchema = z.lazy(() =>
  z.object({ key: z.string(), parked_at: time(), dead_message_id: z.string(), held: count() }),
);

export const parkedKeysResponseSchema = z.lazy(() => z.object({ keys: z.array(parkedKeySchema) }));

export const skipResultSchema = z.lazy(() =>
  z.object({
    key: z.string(),
    /** Held messages of the key let through. */
    released: count(),
  }),
);

export const traceEventSchema = z.lazy(() =>
  z.object({ at: time(), event: z.string(), detail: z.record(z.string(), z.unknown()) }),
);

/** Where a message is and everything that happened to it. */
export const messageTraceSchema = z.lazy(() =>
  z.object({
    message_id: z.string(),
    state: z.enum(['pending', 'leased', 'delayed', 'acked', 'dead', 'held', 'purged']),
    shard: z.nullable(z.string()),
    sequence: z.nullable(z.string()),
    enqueued_at: z.nullable(time()),
    attempts: z.array(failedAttemptSchema),
    events: z.array(traceEventSchema),
    ...deliveryContext(),
  }),
);

export const auditEntrySchema = z.lazy(() =>
  z.object({
    at: time(),
    /** skip, purge, purge_queue, redrive, redrive_cancel, replay, replay_cancel, retention, retention_cancel, pause, resume. */
    action: z.string(),
    actor: z.string(),
    /** The Lambda consumer whose state the action was on; absent for the queue's own. */
    consumer: z.optional(z.string()),
    target: z.string(),
    reason: z.optional(z.string()),
    detail: z.optional(z.record(z.string(), z.unknown())),
  }),
);

export const auditResponseSchema = z.lazy(() => z.object({ entries: z.array(auditEntrySchema) }));

const apiKeyInfoShape = () => ({
  name: z.string(),
  scopes: z.array(z.string()),
  rate_limits: rateLimitsSchema,
  created_at: time(),
  created_by: z.string(),
  revoked_at: z.nullable(time()),
  /** The key's SQS credentials' access key id; their secret is shown once, when made. */
  sqs_access_key_id: z.nullable(z.string()),
});

export const apiKeyInfoSchema = z.lazy(() => z.object(apiKeyInfoShape()));

export const keysResponseSchema = z.lazy(() => z.object({ keys: z.array(apiKeyInfoSchema) }));

export const sqsCredentialsSchema = z.lazy(() =>
  z.object({ access_key_id: z.string(), secret_access_key: z.string() }),
);

/** The key itself (and its SQS secret) are answered once, here. */
export const createdKeySchema = z.lazy(() =>
  z.object({ ...apiKeyInfoShape(), key: z.string(), sqs_credentials: z.optional(sqsCredentialsSchema) }),
);

export const sqsCredentialsCreatedSchema = z.lazy(() =>
  z.object({ name: z.string(), sqs_credentials: sqsCredentialsSchema, created_at: time() }),
);

export const healthSchema = z.lazy(() => z.object({ status: z.string() }));

/** What a queue (or the tenant) used over a range (GET /usage); docs/usage.md says how each is counted. */
const usageFiguresShape = () => {
  const pair = () => z.object({ messages: count(), bytes: count() });
  const amount = () => z.number().check(z.minimum(0));
  return {
    produced: pair(),
    /** Acked messages of pull queues (a push queue's consumers finish theirs uncounted). */
    consumed: pair(),
    /** Bytes held, integrated over time: unconsumed on the log side, and as dead letters. */
    stored_gb_hours: z.object({ log: amount(), dlq: amount() }),
    /** Requests on the queue by kind; `throttled`: those of them refused over a quota. */
    requests: z.object({
      produce: count(),
      receive: count(),
      ack: count(),
      nack: count(),
      extend: count(),
      other: count(),
      total: count(),
      throttled: count(),
    }),
    /** At list prices: API Gateway and Lambda per request, DynamoDB storage per GB-hour. */
    cost_usd: z.object({ requests: amount(), storage: amount(), total: amount() }),
  };
};

export const queueUsageSchema = z.lazy(() =>
  z.object({
    queue: z.string(),
    /** The samples the figures run between: those nearest `from` and `to`. */
    sampled_from: time(),
    sampled_to: time(),
    ...usageFiguresShape(),
  }),
);

export const usageResponseSchema = z.lazy(() =>
  z.object({
    from: time(),
    to: time(),
    queues: z.array(queueUsageSchema),
    total: z.object(usageFiguresShape()),
    /** Which figures are exact counts between the samples, and which are estimates. */
    accuracy: z.object({
      exact: z.array(z.string()),
      estimated: z.array(z.string()),
      prices_as_of: z.string(),
    }),
  }),
);

export type ProduceResult = z.infer<typeof produceResultSchema>;
export type ProduceStatus = ProduceResult['status'];
export type ProduceResponse = z.infer<typeof produceResponseSchema>;
export type DeliveredMessage = z.infer<typeof deliveredMessageSchema>;
export type ReceiveResponse = z.infer<typeof receiveResponseSchema>;
export type AckResult = z.infer<typeof ackResultSchema>;
export type AckStatus = AckResult['status'];
export type AckResponse = z.infer<typeof ackResponseSchema>;
export type NackResult = z.infer<typeof nackResultSchema>;
export type ExtendResult = z.infer<typeof extendResultSchema>;
export type QueueInfo = z.infer<typeof queueInfoSchema>;
export type QueueAction = QueueInfo['actions'][number];
export type QueuesResponse = z.infer<typeof queuesResponseSchema>;
export type QueuePause = z.infer<typeof queuePauseSchema>;
export type PauseResponse = z.infer<typeof pauseResponseSchema>;
export type ResumeResponse = z.infer<typeof resumeResponseSchema>;
export type QueueStats = z.infer<typeof queueStatsSchema>;
export type ConsumerStats = z.infer<typeof consumerStatsSchema>;
export type FailedAttempt = z.infer<typeof failedAttemptSchema>;
export type DeadLetterGroup = z.infer<typeof deadLetterGroupSchema>;
export type DeadLetterGroups = z.infer<typeof deadLetterGroupsSchema>;
export type DeadLetter = z.infer<typeof deadLetterSchema>;
export type DlqPage = z.infer<typeof dlqPageSchema>;
export type ErrorBody = z.infer<typeof errorBodySchema>;
export type Redrive = z.infer<typeof redriveSchema>;
export type JobStatus = Redrive['status'];
export type RedriveMatching = z.infer<typeof redriveMatchingSchema>;
export type Retention = z.infer<typeof retentionSchema>;
export type Replay = z.infer<typeof replaySchema>;
export type ParkedKey = z.infer<typeof parkedKeySchema>;
export type ParkedKeysResponse = z.infer<typeof parkedKeysResponseSchema>;
export type SkipResult = z.infer<typeof skipResultSchema>;
export type TraceEvent = z.infer<typeof traceEventSchema>;
export type MessageTrace = z.infer<typeof messageTraceSchema>;
export type TraceState = MessageTrace['state'];
export type AuditEntry = z.infer<typeof auditEntrySchema>;
export type AuditResponse = z.infer<typeof auditResponseSchema>;
export type ApiKeyInfo = z.infer<typeof apiKeyInfoSchema>;
export type KeysResponse = z.infer<typeof keysResponseSchema>;
export type SqsCredentials = z.infer<typeof sqsCredentialsSchema>;
export type CreatedKey = z.infer<typeof createdKeySchema>;
export type SqsCredentialsCreated = z.infer<typeof sqsCredentialsCreatedSchema>;
export type Health = z.infer<typeof healthSchema>;
export type QueueUsage = z.infer<typeof queueUsageSchema>;
export type UsageResponse = z.infer<typeof usageResponseSchema>;

/** GET /alarms: the queues' alarms above their threshold, as the sweep last evaluated them. */
export const alarmsResponseSchema = z.lazy(() =>
  z.object({
    alarms: z.array(
      z.object({
        /** `leaseq-<tenant>/<queue or queue~consumer>/<kind>`, as the alarm topic names it. */
        name: z.string(),
        queue: z.string(),
        kind: z.string(),
        /** `ALARM`: it fired; `PENDING`: above its threshold, not yet for as long as it must be. */
        state: z.enum(['ALARM', 'PENDING']),
        since: time(),
        /** Whether alarms.page hears it. */
        pages: z.boolean(),
        description: z.string(),
      }),
    ),
  }),
);
export type AlarmsResponse = z.infer<typeof alarmsResponseSchema>;
