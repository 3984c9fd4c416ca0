import * as z from 'zod/mini';
import { intIn } from '../core/zod-mini.js';
import { CONNECTION_ID } from './channel.js';
import {
  attributesSchema,
  consumerNameSchema,
  MESSAGE_ID,
  rateLimitsSchema,
  SCOPE,
  SCOPE_MESSAGE,
  TRACEPARENT,
} from './fields.js';

/**
 * Request bodies and queries of the HTTP API (docs/contract.md, docs/http-api.md): the API
 * validates with them, the services and the client take their types from them (the client's
 * `z.input`: what a caller may send, fields with defaults optional). Each is `z.lazy`, built by its route's
 * first request: a function instance builds the schemas of the routes it serves, not all of them
 * at init.
 */

export const MAX_BODY_BYTES = 5 * 1024 * 1024;
export const MAX_DELAY_SECONDS = 900;

const headersSchema = z
  .record(z.string().check(z.minLength(1), z.maxLength(128)), z.string().check(z.maxLength(1024)))
  .check(z.refine((h) => Object.keys(h).length <= 32, 'at most 32 headers'));

export const traceparentSchema = z.lazy(() =>
  z.string().check(z.regex(TRACEPARENT, 'traceparent is a W3C trace context: 00-<32 hex>-<16 hex>-<2 hex>')),
);

export const produceMessageSchema = z.lazy(() =>
  z.strictObject({
    message_id: z.optional(z.string().check(z.regex(MESSAGE_ID, 'message_id is 1-128 of [A-Za-z0-9_.:-]'))),
    key: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
    payload: z.unknown().check(z.refine((v) => v !== undefined, 'payload is required (any JSON value)')),
    headers: z.optional(headersSchema),
    /** Typed attributes (what SQS clients send as MessageAttributes), returned with each delivery. */
    attributes: z.optional(attributesSchema),
    delay_seconds: z._default(intIn(0, MAX_DELAY_SECONDS), 0),
    /** W3C trace context; the request's `traceparent` header stands for messages without one. */
    traceparent: z.optional(traceparentSchema),
  }),
);

export const produceRequestSchema = z.lazy(() =>
  z.strictObject({
    messages: z
      .array(produceMessageSchema)
      .check(z.minLength(1, 'send 1-500 messages'), z.maxLength(500, 'send 1-500 messages')),
  }),
);

/** A message as the producer reads it, defaults applied. */
export type ProduceMessage = z.infer<typeof produceMessageSchema>;
/** A message as a caller may send it. */
export type ProduceMessageInput = z.input<typeof produceMessageSchema>;
export type ProduceRequest = z.infer<typeof produceRequestSchema>;

const pollIdSchema = z.string().check(z.regex(/^[A-Za-z0-9_-]{8,64}$/, 'poll_id is 8-64 of [A-Za-z0-9_-]'));
const receiptSchema = z.string().check(z.minLength(1), z.maxLength(1024));

export const receiveRequestSchema = z.lazy(() =>
  z.strictObject({
    max_messages: z._default(intIn(1, 100), 10),
    wait_seconds: z._default(intIn(0, 20), 0),
    /** Bounded by the queue's max_lease_seconds where the queue is known. */
    lease_seconds: z.optional(intIn(1)),
    consumer_id: z.optional(z.string().check(z.minLength(1), z.maxLength(128))),
    /**
     * Names this long poll, so its caller can call it off (POST /queues/{q}/receive/cancel): a
     * worker that stops does not wait out its poll, and what the poll leases after is given back.
     */
    poll_id: z.optional(pollIdSchema),
    /**
     * A wake channel connection (docs/wake-channel.md): a receive that answers nothing registers
     * it, so the queue's next admission wakes its caller on that connection.
     */
    wake_connection: z.optional(
      z.string().check(z.regex(CONNECTION_ID, 'wake_connection is a wake channel connection id')),
    ),
  }),
);

export const cancelReceiveSchema = z.lazy(() => z.strictObject({ poll_id: pollIdSchema }));

export const ackRequestSchema = z.lazy(() =>
  z.strictObject({
    receipts: z
      .array(receiptSchema)
      .check(z.minLength(1, 'send 1-100 receipts'), z.maxLength(100, 'send 1-100 receipts')),
  }),
);

export const nackRequestSchema = z.lazy(() =>
  z
    .strictObject({
      receipt: receiptSchema,
      retry_after_seconds: z.optional(intIn(0, 12 * 3600)),
      error: z.optional(z.string().check(z.maxLength(4096))),
      retryable: z._default(z.boolean(), true),
      /** Give the message back without a failed attempt (a worker that stops before it is done). */
      release: z._default(z.boolean(), false),
    })
    .check(
      z.refine((n) => !(n.release && !n.retryable), {
        path: ['release'],
        message: 'a released message is retried: release and retryable false exclude each other',
      }),
    ),
);

export const extendRequestSchema = z.lazy(() =>
  z.strictObject({
    receipt: receiptSchema,
    lease_seconds: intIn(1),
  }),
);

export type ReceiveRequest = z.infer<typeof receiveRequestSchema>;
export type ReceiveRequestInput = z.input<typeof receiveRequestSchema>;
export type AckRequest = z.infer<typeof ackRequestSchema>;
export type NackRequest = z.infer<typeof nackRequestSchema>;
export type NackRequestInput = z.input<typeof nackRequestSchema>;
export type ExtendRequest = z.infer<typeof extendRequestSchema>;

/**
 * `?consumer=` on the operations routes: the state of one of the queue's Lambda consumers
 * instead of the queue's own. Other query parameters stay ignored where they always were.
 */
export const consumerQuerySchema = z.lazy(() => z.object({ consumer: z.optional(consumerNameSchema) }));

export const dlqListQuerySchema = z.lazy(() =>
  z.strictObject({
    limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(100)), 50),
    cursor: z.optional(z.string().check(z.maxLength(2048))),
    /** Read by operationsRoute; listed so that this strict schema lets it through. */
    consumer: z.optional(consumerNameSchema),
  }),
);

const ratePerSecSchema = z._default(z.number().check(z.positive(), z.maximum(1000)), 10);
const messageIdsSchema = z.array(z.string().check(z.regex(MESSAGE_ID))).check(z.maxLength(1000));

const redriveFilterSchema = z._default(
  z.strictObject({
    message_ids: z.optional(messageIdsSchema),
    error_contains: z.optional(z.string().check(z.minLength(1), z.maxLength(1024))),
    dead_after: z.optional(z.iso.datetime({ offset: true })),
    dead_before: z.optional(z.iso.datetime({ offset: true })),
  }),
  {},
);

export const redriveRequestSchema = z.lazy(() =>
  z.strictObject({ rate_per_sec: ratePerSecSchema, filter: redriveFilterSchema }),
);

/** What a redrive with this filter would take, counted before one starts. */
export const redriveMatchingRequestSchema = z.lazy(() => z.strictObject({ filter: redriveFilterSchema }));

/** A DLQ retention for the dead letters already there (an incident's first move); it only extends. */
export const retentionRequestSchema = z.lazy(() =>
  z.strictObject({
    dlq_retention_hours: intIn(24, 2 * 365 * 24),
    reason: z.string().check(z.minLength(1), z.maxLength(500)),
    rate_per_sec: ratePerSecSchema,
  }),
);

export const replayRequestSchema = z.lazy(() =>
  z.strictObject({
    /** The window of times the log took the messages (ISO 8601); `to` defaults to now. */
    from: z.iso.datetime({ offset: true }),
    to: z.optional(z.iso.datetime({ offset: true })),
    rate_per_sec: ratePerSecSchema,
    filter: z._default(
      z.strictObject({
        message_ids: z.optional(messageIdsSchema),
        keys: z.optional(
          z.array(z.string().check(z.minLength(1), z.maxLength(256))).check(z.maxLength(1000)),
        ),
      }),
      {},
    ),
  }),
);

export const skipRequestSchema = z.lazy(() =>
  z.strictObject({
    reason: z.string().check(z.minLength(1, 'say why the key is skipped'), z.maxLength(1024)),
  }),
);

export const pauseRequestSchema = z.lazy(() =>
  z.strictObject({
    reason: z.string().check(z.minLength(1, 'say why deliveries are paused'), z.maxLength(1024)),
  }),
);

export const resumeRequestSchema = z.lazy(() =>
  z.strictObject({
    reason: z.optional(z.string().check(z.minLength(1), z.maxLength(1024))),
  }),
);

export const auditQuerySchema = z.lazy(() =>
  z.strictObject({
    limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(500)), 100),
  }),
);

export const createKeySchema = z.lazy(() =>
  z.strictObject({
    name: z.string().check(z.regex(/^[A-Za-z0-9_.-]{1,64}$/, 'names are 1-64 of [A-Za-z0-9_.-]')),
    scopes: z.array(z.string().check(z.regex(SCOPE, SCOPE_MESSAGE))).check(z.minLength(1), z.maxLength(100)),
    rate_limits: z.optional(rateLimitsSchema),
    /** Also make SQS credentials for the key (answered once, as the key is). */
    sqs_credentials: z._default(z.boolean(), false),
  }),
);

/** POST /keys/{name}/sqs-credentials takes no options yet; a body, when sent, is an empty object. */
export const createSqsCredentialsSchema = z.lazy(() => z.strictObject({}));

/** GET /usage: a range of ISO 8601 times, and a queue (all the tenant's when left out). */
export const usageQuerySchema = z.lazy(() =>
  z.strictObject({
    from: z.iso.datetime({ offset: true }),
    to: z.iso.datetime({ offset: true }),
    queue: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  }),
);

export type ConsumerQuery = z.infer<typeof consumerQuerySchema>;
export type DlqListQuery = z.infer<typeof dlqListQuerySchema>;
export type RedriveRequestInput = z.input<typeof redriveRequestSchema>;
export type ReplayRequestInput = z.input<typeof replayRequestSchema>;
export type RetentionRequestInput = z.input<typeof retentionRequestSchema>;
export type AuditQuery = z.infer<typeof auditQuerySchema>;
export type CreateKeyRequestInput = z.input<typeof createKeySchema>;
export type UsageQuery = z.infer<typeof usageQuerySchema>;
