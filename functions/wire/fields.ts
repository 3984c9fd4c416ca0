import * as z from 'zod/mini';
// For its effect: the English messages of every issue (core/zod-mini.ts).
import '../core/zod-mini.js';

/**
 * Fields the wire shares with the server's own records: the envelope (core/envelope.ts), the
 * tenant file (core/config.ts) and API keys (core/auth.ts) take them from here, so a field reads
 * the same in a request, an answer and what is stored. Plain zod/mini: the client's declarations
 * and the console's type check reach this file, where neither Node's nor AWS's types are.
 */

export const MESSAGE_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/** W3C Trace Context `traceparent`: version 00, trace id, parent id, flags (all lowercase hex). */
export const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * Typed message attributes (SQS's MessageAttributes, which the SQS endpoint maps here): a data
 * type (String, Number or Binary, with an optional custom suffix) and its value, binary as base64.
 */
export const attributeSchema = z.strictObject({
  data_type: z
    .string()
    .check(
      z.maxLength(256),
      z.regex(
        /^(String|Number|Binary)(\.[A-Za-z0-9_.-]+)?$/,
        'data_type is String, Number or Binary, with an optional .suffix',
      ),
    ),
  string_value: z.optional(z.string().check(z.maxLength(262_144))),
  binary_value: z.optional(z.base64().check(z.maxLength(349_526))),
});

export const ATTRIBUTE_NAME = /^(?!aws\.|amazon\.)(?!\.)(?!.*\.\.)[A-Za-z0-9_.-]{1,256}(?<!\.)$/i;

export const attributesSchema = z
  .record(
    z.string().check(z.regex(ATTRIBUTE_NAME, 'an attribute name is 1-256 of [A-Za-z0-9_.-]')),
    attributeSchema,
  )
  .check(z.refine((a) => Object.keys(a).length <= 10, 'at most 10 attributes'));

export type MessageAttributes = z.infer<typeof attributesSchema>;

/** `produce|consume|admin:<queue or *>`. */
export const SCOPE = /^(produce|consume|admin):(\*|[a-z0-9-]{1,64})$/;
export const SCOPE_MESSAGE = 'a scope is produce|consume|admin:<queue or *>';

/** A Lambda consumer's name: it keys the consumer's state (see consumerNamespace). */
export const consumerNameSchema = z
  .string()
  .check(z.regex(/^[a-z0-9-]{1,32}$/, 'consumer names are 1-32 of [a-z0-9-]'));

const rateSchema = z.strictObject({
  requests_per_sec: z.optional(z.number().check(z.positive(), z.maximum(1_000_000))),
  bytes_per_sec: z.optional(z.number().check(z.positive(), z.maximum(1e12))),
  /** Messages a second (produce): a shared stream's shards take 1,000 records a second each. */
  messages_per_sec: z.optional(z.number().check(z.positive(), z.maximum(1_000_000))),
});

/** Rate quotas of a queue or an API key (docs/access-and-quotas.md, "Rate quotas"): requests and bytes a second. */
export const rateLimitsSchema = z.strictObject({
  produce: z.optional(rateSchema),
  consume: z.optional(rateSchema),
});

export type RateLimits = z.infer<typeof rateLimitsSchema>;
