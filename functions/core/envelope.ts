import * as z from 'zod/mini';
import { attributesSchema, MESSAGE_ID } from '../wire/fields.js';
import { intIn } from './zod-mini.js';

export {
  ATTRIBUTE_NAME,
  attributeSchema,
  attributesSchema,
  MESSAGE_ID,
  type MessageAttributes,
  TRACEPARENT,
} from '../wire/fields.js';

/**
 * The message envelope: what a Kinesis record of a queue holds. Defined once; the producer
 * writes it and every reader (dispatch, consumers, tools) parses it with this schema.
 */

export const claimRefSchema = z.object({
  /** S3 object key of the payload; the bucket is the tenant's. */
  key: z.string(),
  bytes: intIn(0),
  sha256: z.string(),
});

export const envelopeSchema = z.object({
  v: z.literal(1),
  message_id: z.string().check(z.regex(MESSAGE_ID)),
  /**
   * The server assigned the id (a ULID): no producer will send it again, so no dedup record is
   * kept for it and the lease layer admits its entry without looking for one.
   */
  server_id: z.optional(z.literal(true)),
  queue: z.string(),
  key: z.optional(z.string()),
  headers: z.optional(z.record(z.string(), z.string())),
  attributes: z.optional(attributesSchema),
  /** When the producer's request first accepted the message. */
  produced_at: z.iso.datetime(),
  /** When this copy was appended to the stream (a retry appends a new copy). */
  enqueued_at: z.iso.datetime(),
  attempt: intIn(1),
  /**
   * How many times this message has entered the log: 1 from the producer, +1 each time the
   * sweep puts it back (a retry or a delay). Admission admits each entry once.
   */
  entry: z._default(intIn(1), 1),
  /** Not deliverable before this time (delay_seconds on produce, or a retry tier). */
  deliver_after: z.optional(z.iso.datetime()),
  /**
   * Re-appended for one consumer only: a Lambda consumer's retry (the sweep puts it back into
   * the queue's stream, which every consumer of the queue reads). Other consumers pass it over.
   */
  for: z.optional(z.string()),
  /**
   * Not a message: a nudge for the Lambda consumer `for` of an ordered queue to deliver the held
   * messages of `key` (appended by the sweep, or a skip, when nothing else would come for the key).
   */
  wake: z.optional(z.literal(true)),
  /**
   * A replay's copy of the message (POST /queues/{q}/replay): the replay's id. Admission takes one
   * copy per replay (core/replay-policy.ts admissionId); deliveries show it as `replay_id`.
   */
  replay: z.optional(z.string()),
  /** The version of the queue's payload schema the payload was checked against (config `schema_ref`). */
  schema_ref: z.optional(z.string()),
  /** The producer's W3C trace context, handed to every delivery. */
  traceparent: z.optional(z.string()),
  payload: z.optional(z.unknown()),
  claim: z.optional(claimRefSchema),
  /**
   * Lease layer: a retry's entry carries no payload of its own; it is the payload of this entry of
   * a segment (the message's first entry's), which outlives the retry.
   */
  ref: z.optional(
    z.object({
      shard: z.string(),
      id: z.string(),
      store: z.enum(['ddb', 's3']),
      index: intIn(0),
    }),
  ),
  /**
   * A retry entry of a nacked entry that waited in its range (core/ranges.ts waitsInRange): where
   * that entry is. Its admission finishes that entry, once (a second copy is passed over).
   */
  from: z.optional(
    z.object({
      shard: z.string(),
      range: z.string(),
      index: intIn(0),
    }),
  ),
});

export type Envelope = z.infer<typeof envelopeSchema>;
export type ClaimRef = z.infer<typeof claimRefSchema>;
export type PayloadRef = NonNullable<Envelope['ref']>;

export function encodeEnvelope(envelope: Envelope): Uint8Array {
  return Buffer.from(JSON.stringify(envelope), 'utf8');
}

export function decodeEnvelope(data: Uint8Array): Envelope {
  return envelopeSchema.parse(JSON.parse(Buffer.from(data).toString('utf8')));
}

/** The bytes of a message's payload, wherever it lives: what storage quotas count. */
export function payloadBytes(env: Pick<Envelope, 'payload' | 'claim'>): number {
  return env.claim ? env.claim.bytes : Buffer.byteLength(JSON.stringify(env.payload ?? null));
}

/** What a delivery carries of the envelope beyond its payload, when the producer gave it. */
export function deliveryContext(env: Pick<Envelope, 'schema_ref' | 'traceparent' | 'replay'>): {
  schema_ref?: string;
  traceparent?: string;
  replay_id?: string;
} {
  return {
    ...(env.schema_ref !== undefined ? { schema_ref: env.schema_ref } : {}),
    ...(env.traceparent !== undefined ? { traceparent: env.traceparent } : {}),
    ...(env.replay !== undefined ? { replay_id: env.replay } : {}),
  };
}

/**
 * What every delivery shows of a message, pull or Lambda: the envelope's fields beside its payload
 * (read from its claim check by the caller). `enqueued_at` is when the producer's request accepted it.
 */
export function messageView(env: Envelope, payload: unknown, attempt = env.attempt) {
  return {
    message_id: env.message_id,
    key: env.key ?? null,
    payload,
    headers: env.headers ?? {},
    ...(env.attributes !== undefined ? { attributes: env.attributes } : {}),
    attempt,
    enqueued_at: env.produced_at,
    ...deliveryContext(env),
  };
}
