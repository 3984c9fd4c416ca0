import { z } from 'zod';
import { issuesOf } from './validation.js';

/** The tenant file (API.md "Tenant configuration"): one schema for the CDK stack and the local runtime. */

export const QUEUE_NAME = /^[a-z0-9-]{1,64}$/;

const HOUR = 3600;

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
  })
  .superRefine((q, ctx) => {
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
  });

const scopeSchema = z
  .string()
  .regex(/^(produce|consume|admin):(\*|[a-z0-9-]{1,64})$/, 'a scope is produce|consume|admin:<queue or *>');

/** A key declared in the tenant file: only its SHA-256 is kept, never the key itself. */
export const apiKeyConfigSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'sha256 is the lowercase hex SHA-256 of the key'),
  scopes: z.array(scopeSchema).min(1),
});

export const tenantConfigSchema = z.strictObject({
  tenant: z.string().regex(/^[a-z0-9-]{1,32}$/, 'tenant names are 1-32 of [a-z0-9-]'),
  queues: z
    .record(z.string().regex(QUEUE_NAME, 'queue names are 1-64 of [a-z0-9-]'), queueConfigSchema)
    .refine((q) => Object.keys(q).length > 0, 'declare at least one queue'),
  api_keys: z.array(apiKeyConfigSchema).default([]),
});

export type QueueConfig = z.infer<typeof queueConfigSchema>;
export type TenantConfig = z.infer<typeof tenantConfigSchema>;
export type ApiKeyConfig = z.infer<typeof apiKeyConfigSchema>;

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

export function tableName(tenant: string): string {
  return `leaseq-${tenant}`;
}
