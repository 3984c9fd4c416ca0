import * as z from 'zod';
import { SCOPE, SCOPE_MESSAGE } from './auth.js';
import { issuesOf } from './validation.js';

/** The tenant file (API.md "Tenant configuration"): one schema for the CDK stack and the local runtime. */

export const QUEUE_NAME = /^[a-z0-9-]{1,64}$/;

const HOUR = 3600;

/** A Lambda consumer's name: it keys the consumer's state (see consumerNamespace). */
export const consumerNameSchema = z
  .string()
  .regex(/^[a-z0-9-]{1,32}$/, 'consumer names are 1-32 of [a-z0-9-]');

/**
 * A Lambda function subscribed to the queue's stream (DESIGN §2 "push consumers"), wrapped in
 * the consumer middleware (`leaseq/consumer`).
 */
const lambdaConsumerSchema = z.strictObject({
  name: consumerNameSchema,
  /** The handler module, relative to the project root (the stack bundles it; the local runtime imports it). */
  entry: z
    .string()
    .regex(/^(?!\/)(?!.*(^|\/)\.\.(\/|$)).+\.(ts|mts|js|mjs)$/, 'a relative path to a .ts or .js module'),
  /** The module's export that is the handler. */
  handler: z
    .string()
    .regex(/^[A-Za-z_$][A-Za-z0-9_$]*$/, 'an export name')
    .default('handler'),
  batch_size: z.number().int().min(1).max(10_000).default(100),
  max_batching_window_seconds: z.number().int().min(0).max(300).default(0),
  timeout_seconds: z.number().int().min(1).max(900).default(60),
  memory_mb: z.number().int().min(128).max(10_240).default(512),
});

const rateSchema = z.strictObject({
  requests_per_sec: z.number().positive().max(1_000_000).optional(),
  bytes_per_sec: z.number().positive().max(1e12).optional(),
});

/** Rate quotas of a queue or an API key (DESIGN §3): requests and bytes a second. */
export const rateLimitsSchema = z.strictObject({
  produce: rateSchema.optional(),
  consume: rateSchema.optional(),
});

export type RateLimits = z.infer<typeof rateLimitsSchema>;

export const queueConfigSchema = z
  .strictObject({
    ordered: z.boolean().default(false),
    shards: z.number().int().min(1).max(500).default(2),
    lease_seconds: z
      .number()
      .int()
      .min(1)
      .max(12 * HOUR)
      .default(60),
    max_lease_seconds: z
      .number()
      .int()
      .min(1)
      .max(12 * HOUR)
      .default(HOUR),
    max_attempts: z.number().int().min(1).max(100).default(5),
    backoff_seconds: z
      .array(
        z
          .number()
          .int()
          .min(0)
          .max(12 * HOUR),
      )
      .min(1)
      .max(20)
      .default([10, 60, 600, 3600]),
    retention_hours: z
      .number()
      .int()
      .min(24)
      .max(365 * 24)
      .default(96),
    dlq_retention_hours: z
      .number()
      .int()
      .min(48)
      .max(2 * 365 * 24)
      .default(336),
    dedup_window_seconds: z.number().int().min(300).default(86_400),
    claim_check_bytes: z
      .number()
      .int()
      .min(1024)
      .max(900 * 1024)
      .default(262_144),
    window_size: z.number().int().min(1).max(1_000_000).default(10_000),
    /**
     * Produce admits what it appended (admission/fast-admission.ts), so it is receivable when
     * produce answers: `quiet` while a shard takes under a range's worth a second (above that,
     * dispatch's batches keep ranges full and units per message low), `always` (latency bought
     * with units under load), `off` (dispatch alone, about a second later on AWS).
     * docs/architecture.md, "Latency".
     */
    fast_admission: z.enum(['quiet', 'always', 'off']).default('quiet'),
    /** A queue with Lambda consumers is consumed by them (push), not by dispatch (pull). */
    consumers: z.array(lambdaConsumerSchema).default([]),
    rate_limits: rateLimitsSchema.default({}),
    /** Bytes the queue may hold unconsumed; the default is derived (see storageQuotaBytes). */
    storage_quota_bytes: z.number().int().positive().optional(),
    /**
     * A JSON Schema every produced payload must match: produce answers a message that does not
     * `failed` (SCHEMA_VALIDATION_FAILED) and goes on with the rest of its batch. Compiled where
     * the file is loaded (checkPayloadSchemas), so only produce's bundle carries the validator.
     */
    schema: z.record(z.string(), z.unknown()).optional(),
    /** The schema's version: carried in each accepted message's envelope and every delivery. */
    schema_ref: z.string().min(1).max(128).optional(),
  })
  .superRefine((q, ctx) => {
    if (q.schema_ref !== undefined && q.schema === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['schema_ref'],
        message: 'names the version of a schema: add schema',
      });
    if (q.lease_seconds > q.max_lease_seconds) {
      ctx.addIssue({ code: 'custom', path: ['lease_seconds'], message: 'must not exceed max_lease_seconds' });
    }
    if (q.dlq_retention_hours < 2 * q.retention_hours) {
      ctx.addIssue({
        code: 'custom',
        path: ['dlq_retention_hours'],
        message: 'must be at least 2 × retention_hours',
      });
    }
    if (q.dedup_window_seconds > q.retention_hours * HOUR) {
      ctx.addIssue({
        code: 'custom',
        path: ['dedup_window_seconds'],
        message: 'must not exceed the retention',
      });
    }
    const seen = new Set<string>();
    q.consumers.forEach((c, i) => {
      // The name keys the consumer's message state: two of one name would share it.
      if (seen.has(c.name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['consumers', i, 'name'],
          message: 'consumer names are unique',
        });
      }
      seen.add(c.name);
    });
  });

const scopeSchema = z.string().regex(SCOPE, SCOPE_MESSAGE);

/** A key declared in the tenant file: only its SHA-256 is kept, never the key itself. */
export const apiKeyConfigSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'sha256 is the lowercase hex SHA-256 of the key'),
  scopes: z.array(scopeSchema).min(1),
  rate_limits: rateLimitsSchema.default({}),
});

/**
 * Who hears the tenant's CloudWatch alarms (infra/alarms.ts): each address is subscribed to the
 * tenant's alarm topic by email, and confirms it once from the message SNS sends. `email` hears
 * every alarm; `consuming_team`, `platform` and `producing_team` only their own
 * (infra/alarm-rules.ts ALARM_OWNERS).
 */
const addresses = z.array(z.email()).max(20).default([]);
export const alarmsConfigSchema = z.strictObject({
  email: addresses,
  consuming_team: addresses,
  platform: addresses,
  producing_team: addresses,
});

export type AlarmsConfig = z.infer<typeof alarmsConfigSchema>;

export const tenantConfigSchema = z
  .strictObject({
    tenant: z.string().regex(/^[a-z0-9-]{1,32}$/, 'tenant names are 1-32 of [a-z0-9-]'),
    queues: z
      .record(z.string().regex(QUEUE_NAME, 'queue names are 1-64 of [a-z0-9-]'), queueConfigSchema)
      .refine((q) => Object.keys(q).length > 0, 'declare at least one queue'),
    api_keys: z.array(apiKeyConfigSchema).default([]),
    alarms: alarmsConfigSchema.default({ email: [], consuming_team: [], platform: [], producing_team: [] }),
  })
  .superRefine((t, ctx) => {
    // A scope on a queue the file does not declare is a typo that would fail every request.
    t.api_keys.forEach((key, i) => {
      key.scopes.forEach((scope, j) => {
        const queue = scope.slice(scope.indexOf(':') + 1);
        if (queue !== '*' && !Object.hasOwn(t.queues, queue))
          ctx.addIssue({
            code: 'custom',
            path: ['api_keys', i, 'scopes', j],
            message: `names queue "${queue}", which the file does not declare`,
          });
      });
    });
  });

export type QueueConfig = z.infer<typeof queueConfigSchema>;
export type TenantConfig = z.infer<typeof tenantConfigSchema>;
export type ApiKeyConfig = z.infer<typeof apiKeyConfigSchema>;
export type ConsumerConfig = z.infer<typeof lambdaConsumerSchema>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    message: string,
    readonly issues: { path: string; message: string }[],
  ) {
    super(message);
  }
}

/** Validates a parsed tenant file and fills in every default. */
export function parseTenantConfig(raw: unknown, source = 'tenant file'): TenantConfig {
  const result = tenantConfigSchema.safeParse(raw);
  if (result.success) return result.data;
  const issues = issuesOf(result.error, '(root)');
  throw new ConfigError(
    `${source} is invalid: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
    issues,
  );
}

/** Resource names derived from the tenant, shared by the stack and the local runtime. */
export function streamName(tenant: string, queue: string): string {
  return `leaseq-${tenant}-${queue}`;
}

/**
 * Where a Lambda consumer keeps its own state of a queue's messages: a queue name of its own,
 * which no real queue can have (`~` is not in QUEUE_NAME), so every store works on it unchanged.
 */
export function consumerNamespace(queue: string, consumer: string): string {
  return `${queue}~${consumer}`;
}

export function isNamespace(name: string): boolean {
  return name.includes('~');
}

/** The queue whose stream feeds a state namespace, and the consumer it belongs to (if any). */
export function namespaceParts(name: string): { queue: string; consumer?: string } {
  const at = name.indexOf('~');
  return at < 0 ? { queue: name } : { queue: name.slice(0, at), consumer: name.slice(at + 1) };
}

export function tableName(tenant: string): string {
  return `leaseq-${tenant}`;
}

/** A Kinesis shard takes 1 MiB a second: the write rate a queue can sustain at most. */
const SHARD_BYTES_PER_SEC = 1024 * 1024;

/**
 * The bytes a queue may hold: its own setting, or what its produce rate (the byte quota, else
 * its shards' write capacity) fills over the retention, with half again for headroom.
 */
export function storageQuotaBytes(q: QueueConfig): number {
  if (q.storage_quota_bytes !== undefined) return q.storage_quota_bytes;
  const rate = q.rate_limits.produce?.bytes_per_sec ?? q.shards * SHARD_BYTES_PER_SEC;
  return Math.floor(rate * q.retention_hours * HOUR * 1.5);
}
