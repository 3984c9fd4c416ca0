import * as z from 'zod';
import { SCOPE, SCOPE_MESSAGE } from '../core/auth.js';
import { consumerNameSchema, rateLimitsSchema } from '../core/config.js';
import { attributesSchema, MESSAGE_ID, type MessageAttributes, TRACEPARENT } from '../core/envelope.js';

/** Request bodies of the HTTP API (API.md), validated at the edge. Types come from here. */

export const MAX_BODY_BYTES = 5 * 1024 * 1024;
export const MAX_DELAY_SECONDS = 900;

const headersSchema = z
  .record(z.string().min(1).max(128), z.string().max(1024))
  .refine((h) => Object.keys(h).length <= 32, 'at most 32 headers');

export const traceparentSchema = z
  .string()
  .regex(TRACEPARENT, 'traceparent is a W3C trace context: 00-<32 hex>-<16 hex>-<2 hex>');

export const produceMessageSchema = z.strictObject({
  message_id: z.string().regex(MESSAGE_ID, 'message_id is 1-128 of [A-Za-z0-9_.:-]').optional(),
  key: z.string().min(1).max(256).optional(),
  payload: z.unknown().refine((v) => v !== undefined, 'payload is required (any JSON value)'),
  headers: headersSchema.optional(),
  /** Typed attributes (what SQS clients send as MessageAttributes), returned with each delivery. */
  attributes: z.optional(attributesSchema),
  delay_seconds: z.number().int().min(0).max(MAX_DELAY_SECONDS).default(0),
  /** W3C trace context; the request's `traceparent` header stands for messages without one. */
  traceparent: traceparentSchema.optional(),
});

export const produceRequestSchema = z.strictObject({
  messages: z.array(produceMessageSchema).min(1, 'send 1-500 messages').max(500, 'send 1-500 messages'),
});

export type ProduceMessage = z.infer<typeof produceMessageSchema>;
export type ProduceRequest = z.infer<typeof produceRequestSchema>;

export type ProduceStatus = 'accepted' | 'duplicate' | 'failed';

export interface ProduceResult {
  message_id: string;
  status: ProduceStatus;
  error?: { code: string; message: string; retryable: boolean };
}

export const receiveRequestSchema = z.strictObject({
  max_messages: z.number().int().min(1).max(100).default(10),
  wait_seconds: z.number().int().min(0).max(20).default(0),
  /** Bounded by the queue's max_lease_seconds where the queue is known. */
  lease_seconds: z.number().int().min(1).optional(),
  consumer_id: z.string().min(1).max(128).optional(),
  /**
   * Names this long poll, so its caller can call it off (POST /queues/{q}/receive/cancel): a
   * worker that stops does not wait out its poll, and what the poll leases after is given back.
   */
  poll_id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{8,64}$/, 'poll_id is 8-64 of [A-Za-z0-9_-]')
    .optional(),
});

export const cancelReceiveSchema = z.strictObject({
  poll_id: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, 'poll_id is 8-64 of [A-Za-z0-9_-]'),
});

export const ackRequestSchema = z.strictObject({
  receipts: z
    .array(z.string().min(1).max(1024))
    .min(1, 'send 1-100 receipts')
    .max(100, 'send 1-100 receipts'),
});

export const nackRequestSchema = z
  .strictObject({
    receipt: z.string().min(1).max(1024),
    retry_after_seconds: z
      .number()
      .int()
      .min(0)
      .max(12 * 3600)
      .optional(),
    error: z.string().max(4096).optional(),
    retryable: z.boolean().default(true),
    /** Give the message back without a failed attempt (a worker that stops before it is done). */
    release: z.boolean().default(false),
  })
  .refine((n) => !(n.release && !n.retryable), {
    path: ['release'],
    message: 'a released message is retried: release and retryable false exclude each other',
  });

export const extendRequestSchema = z.strictObject({
  receipt: z.string().min(1).max(1024),
  lease_seconds: z.number().int().min(1),
});

export type ReceiveRequest = z.infer<typeof receiveRequestSchema>;
export type AckRequest = z.infer<typeof ackRequestSchema>;
export type NackRequest = z.infer<typeof nackRequestSchema>;
export type ExtendRequest = z.infer<typeof extendRequestSchema>;

export interface DeliveredMessage {
  message_id: string;
  receipt: string;
  key: string | null;
  payload: unknown;
  headers: Record<string, string>;
  attempt: number;
  enqueued_at: string;
  lease_expires_at: string;
  attributes?: MessageAttributes;
  schema_ref?: string;
  traceparent?: string;
  replay_id?: string;
}

export type AckStatus = 'acked' | 'stale_receipt' | 'invalid_receipt';

/**
 * `?consumer=` on the operations routes: the state of one of the queue's Lambda consumers
 * instead of the queue's own. Other query parameters stay ignored where they always were.
 */
export const consumerQuerySchema = z.object({ consumer: z.optional(consumerNameSchema) });

export const dlqListQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.string().max(2048).optional(),
  /** Read by operationsRoute; listed so that this strict schema lets it through. */
  consumer: z.optional(consumerNameSchema),
});

export const redriveRequestSchema = z.strictObject({
  rate_per_sec: z.number().positive().max(1000).default(10),
  filter: z
    .strictObject({
      message_ids: z.array(z.string().regex(MESSAGE_ID)).max(1000).optional(),
      error_contains: z.string().min(1).max(1024).optional(),
      dead_after: z.iso.datetime({ offset: true }).optional(),
      dead_before: z.iso.datetime({ offset: true }).optional(),
    })
    .default({}),
});

export const replayRequestSchema = z.strictObject({
  /** The window of times the log took the messages (ISO 8601); `to` defaults to now. */
  from: z.iso.datetime({ offset: true }),
  to: z.iso.datetime({ offset: true }).optional(),
  rate_per_sec: z.number().positive().max(1000).default(10),
  filter: z
    .strictObject({
      message_ids: z.array(z.string().regex(MESSAGE_ID)).max(1000).optional(),
      keys: z.array(z.string().min(1).max(256)).max(1000).optional(),
    })
    .default({}),
});

export const skipRequestSchema = z.strictObject({
  reason: z.string().min(1, 'say why the key is skipped').max(1024),
});

export const pauseRequestSchema = z.strictObject({
  reason: z.string().min(1, 'say why deliveries are paused').max(1024),
});

export const resumeRequestSchema = z.strictObject({
  reason: z.string().min(1).max(1024).optional(),
});

export const auditQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

export const createKeySchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'names are 1-64 of [A-Za-z0-9_.-]'),
  scopes: z.array(z.string().regex(SCOPE, SCOPE_MESSAGE)).min(1).max(100),
  rate_limits: z.optional(rateLimitsSchema),
  /** Also make SQS credentials for the key (answered once, as the key is). */
  sqs_credentials: z.boolean().default(false),
});

/** POST /keys/{name}/sqs-credentials takes no options yet; a body, when sent, is an empty object. */
export const createSqsCredentialsSchema = z.strictObject({});
