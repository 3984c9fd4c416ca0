/**
 * The bodies of leaseq's HTTP API (docs/contract.md), written for the client alone: the SDK runs in
 * services that do not have the server's code, so nothing here comes from functions/.
 * Field names are the wire's, so docs/openapi.json documents them.
 */

export interface ProduceMessage<T = unknown> {
  /** 1-128 of [A-Za-z0-9_.:-]; the client assigns a ULID when absent. */
  message_id?: string;
  /** Required on ordered queues. */
  key?: string;
  payload: T;
  headers?: Record<string, string>;
  delay_seconds?: number;
}

export type ProduceStatus = 'accepted' | 'duplicate' | 'failed';

export interface ProduceResult {
  message_id: string;
  status: ProduceStatus;
  error?: { code: string; message: string; retryable: boolean };
}

export interface ReceiveOptions {
  max_messages?: number;
  wait_seconds?: number;
  lease_seconds?: number;
  consumer_id?: string;
  /** Names the long poll, so `cancelReceive` can call it off. */
  poll_id?: string;
}

export interface ReceivedMessage<T = unknown> {
  message_id: string;
  receipt: string;
  key: string | null;
  payload: T;
  headers: Record<string, string>;
  /** 1 on the first delivery. */
  attempt: number;
  enqueued_at: string;
  lease_expires_at: string;
  /** Typed attributes, as the producer (or an SQS client's MessageAttributes) gave them. */
  attributes?: Record<string, { data_type: string; string_value?: string; binary_value?: string }>;
  /** The version of the queue's payload schema the payload was checked against. */
  schema_ref?: string;
  /** The producer's W3C trace context. */
  traceparent?: string;
  /** Set on a replay's copy, its retries and its redrives: the replay's id. */
  replay_id?: string;
}

export type AckStatus = 'acked' | 'stale_receipt' | 'invalid_receipt';

export interface AckResult {
  receipt: string;
  status: AckStatus;
}

export interface NackOptions {
  /** Without it, the queue's backoff tier for the attempt applies. */
  retry_after_seconds?: number;
  /** At most 4096 characters. */
  error?: string;
  /** false dead-letters at once. */
  retryable?: boolean;
  /** Give the message back without using up an attempt (and without a history entry). */
  release?: boolean;
}

export interface NackResult {
  status: 'retry_scheduled' | 'dead_lettered';
  attempt: number;
  next_attempt_at?: string;
}

export interface ExtendResult {
  lease_expires_at: string;
  max_lease_expires_at: string;
}

/** A Lambda consumer's own figures (`stats` with `consumer`): README, "A Lambda consumer's dead letters". */
export interface ConsumerStats {
  consumer: string;
  ready: number;
  in_flight: number;
  delayed: number;
  held: number;
  dlq_depth: number;
  parked_keys: number;
  dlq_oldest_age_seconds: number;
  nacked_total: number;
  dead_lettered_total: number;
  expired_unprocessed_total: number;
  commit_stalled_seconds: number;
}

export interface QueueStats {
  depth: number;
  in_flight: number;
  delayed: number;
  /** Ordered queues: messages waiting in their keys' hold areas (0 on other queues). */
  held: number;
  dlq_depth: number;
  parked_keys: number;
  oldest_unacked_age_seconds: number;
  oldest_unacked_age_seconds_by_shard: Record<string, number>;
  /** How long a shard's oldest unfinished message has held its commit point (a poison head). */
  commit_stalled_seconds: number;
  commit_stalled_seconds_by_shard: Record<string, number>;
  dlq_oldest_age_seconds: number;
  produced_total: number;
  acked_total: number;
  redelivered_total: number;
  stale_receipts_total: number;
  expired_unprocessed_total: number;
  /** Payload bytes held against `storage_quota_bytes`: a push queue's slowest consumer's. */
  stored_bytes: number;
  /** Push queues: what each Lambda consumer has not finished. */
  stored_bytes_by_consumer?: Record<string, number>;
  storage_quota_bytes: number;
  /** Requests refused over a quota (429), in all and by the name of the API key refused. */
  throttled_total: number;
  throttled_by_key: Record<string, number>;
  /** Set while an admin paused the queue's deliveries. */
  paused: QueuePause | null;
  /** Whether the unacked backlog shrinks, at the produce and ack rates of the last minute. */
  drain: {
    state: 'empty' | 'draining' | 'not_draining' | 'unknown';
    /** At the last minute's rates; null unless draining (0 when empty). */
    eta_seconds: number | null;
    produce_per_second: number | null;
    ack_per_second: number | null;
  };
}

/** What an action a key may take on a queue needs: its scope `<action>:<queue>` (or `<action>:*`). */
export type QueueAction = 'produce' | 'consume' | 'admin';

/** A queue the key has a scope on (`queues()`). */
export interface QueueInfo {
  name: string;
  ordered: boolean;
  shards: number;
  /** Its Lambda consumers' names; told only to a key with `admin` on the queue. */
  consumers: string[];
  actions: QueueAction[];
}

/** A pause of a queue's deliveries: when, by which key, and why. */
export interface QueuePause {
  paused_at: string;
  actor: string;
  reason: string;
}

export interface FailedAttempt {
  attempt: number;
  consumer_id: string | null;
  reason: 'nack' | 'lease_expired' | 'non_retryable';
  error: string | null;
  delivered_at: string;
  failed_at: string;
}

/** Dead letters that failed the same way last (GET /queues/{q}/dlq-errors). */
export interface DeadLetterGroup {
  /** The last attempt's error text (its first 200 characters), or its reason in parentheses. */
  error: string;
  count: number;
  first_dead_at: string;
  last_dead_at: string;
  sample_message_id: string;
}

export interface DeadLetterGroups {
  /** Largest first. */
  groups: DeadLetterGroup[];
  /** Dead letters read (the oldest 10,000 at most). */
  grouped: number;
  /** Whether there were more than were read. */
  truncated: boolean;
}

export interface DeadLetter<T = unknown> {
  message_id: string;
  key: string | null;
  payload: T;
  headers: Record<string, string>;
  enqueued_at: string;
  dead_at: string;
  attempts: FailedAttempt[];
  /** The version of the queue's payload schema the payload was checked against. */
  schema_ref?: string;
  /** The producer's W3C trace context. */
  traceparent?: string;
  /** Set on a replay's copy, its retries and its redrives: the replay's id. */
  replay_id?: string;
}

export interface DlqPage<T = unknown> {
  messages: DeadLetter<T>[];
  next_cursor: string | null;
}

export interface DlqListOptions {
  limit?: number;
  cursor?: string;
}

/** The error body every non-2xx answer carries. */
export interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

/** `?consumer=<name>`: the same tool on one of the queue's Lambda consumers' state. */
export interface ConsumerScope {
  consumer?: string;
}

export type JobStatus = 'running' | 'done' | 'cancelled';

export interface RedriveFilter {
  message_ids?: string[];
  /** Only dead letters whose last error contains this text. */
  error_contains?: string;
  dead_after?: string;
  dead_before?: string;
}

export interface RedriveRequest {
  /** Default 10, at most 1000. */
  rate_per_sec?: number;
  filter?: RedriveFilter;
}

export interface Redrive {
  redrive_id: string;
  status: JobStatus;
  moved: number;
  remaining: number;
  rate_per_sec: number;
}

export interface ReplayRequest {
  /** ISO 8601: the first time the log took a message to replay. */
  from: string;
  /** Defaults to now. */
  to?: string;
  rate_per_sec?: number;
  filter?: { message_ids?: string[]; keys?: string[] };
}

export interface Replay {
  replay_id: string;
  status: JobStatus;
  from: string;
  to: string;
  replayed: number;
  scanned: number;
  shards: number;
  shards_done: number;
  rate_per_sec: number;
}

/** An ordered queue's key held behind a dead message. */
export interface ParkedKey {
  key: string;
  parked_at: string;
  dead_message_id: string;
  held: number;
}

export interface SkipResult {
  key: string;
  /** Held messages of the key let through. */
  released: number;
}

export type TraceState = 'pending' | 'leased' | 'delayed' | 'acked' | 'dead' | 'held' | 'purged';

export interface TraceEvent {
  at: string;
  event: string;
  detail: Record<string, unknown>;
}

/** Where a message is and everything that happened to it. */
export interface MessageTrace {
  message_id: string;
  state: TraceState;
  shard: string | null;
  sequence: string | null;
  enqueued_at: string | null;
  attempts: FailedAttempt[];
  events: TraceEvent[];
  schema_ref?: string;
  traceparent?: string;
  replay_id?: string;
}

export interface AuditEntry {
  at: string;
  action: string;
  actor: string;
  consumer?: string;
  target: string;
  reason?: string;
  detail?: Record<string, unknown>;
}

export interface ApiKeyInfo {
  name: string;
  scopes: string[];
  rate_limits: Record<string, unknown>;
  created_at: string;
  created_by: string;
  revoked_at: string | null;
  sqs_access_key_id: string | null;
}

export interface SqsCredentials {
  access_key_id: string;
  secret_access_key: string;
}

export interface CreateKeyRequest {
  /** 1-64 of [A-Za-z0-9_.-]. */
  name: string;
  /** For example `produce:orders`, `consume:*`, `admin:*`. */
  scopes: string[];
  rate_limits?: Record<string, unknown>;
  sqs_credentials?: boolean;
}

/** The key itself (and SQS secret) are answered once, here. */
export interface CreatedKey extends ApiKeyInfo {
  key: string;
  sqs_credentials?: SqsCredentials;
}
