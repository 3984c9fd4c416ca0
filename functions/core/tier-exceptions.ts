import * as z from 'zod/mini';
import { ConfigError, QUEUE_NAME, type TenantConfig, teamSchema } from './config.js';
import { issuesOf } from './validation.js';

/**
 * The tenant file's `exceptions` (docs/tiers.md): the stack's alone, like the alarm addresses, so
 * they are parsed apart from the config every function bundles and parses at its start.
 */

/**
 * A setting below its queue's tier standard, allowed until `expires` (a day, UTC): who asked,
 * and why. Synth refuses it once expired; the stack pages on that day.
 */
export const exceptionSchema = z.strictObject({
  queue: z.string().check(z.regex(QUEUE_NAME)),
  setting: z.enum(['owner', 'retention_hours', 'dlq_retention_hours']),
  owner: teamSchema,
  reason: z.string().check(z.minLength(1), z.maxLength(500)),
  expires: z.string().check(
    z.regex(/^\d{4}-\d{2}-\d{2}$/, 'a date: YYYY-MM-DD'),
    z.refine((d) => !Number.isNaN(Date.parse(`${d}T00:00:00Z`)), 'not a date'),
  ),
});

export type ExceptionConfig = z.infer<typeof exceptionSchema>;

/** The exceptions of a tenant file whose queues are `tenant`'s: a ConfigError naming each problem's path. */
export function parseExceptions(raw: unknown, tenant: TenantConfig, source: string): ExceptionConfig[] {
  const parsed = z
    .strictObject({ exceptions: z.array(exceptionSchema) })
    .safeParse({ exceptions: raw ?? [] });
  const issues = parsed.success
    ? parsed.data.exceptions.flatMap((e, i) =>
        Object.hasOwn(tenant.queues, e.queue)
          ? []
          : [
              {
                path: `exceptions[${i}].queue`,
                message: `names queue "${e.queue}", which the file does not declare`,
              },
            ],
      )
    : issuesOf(parsed.error, 'exceptions');
  if (issues.length > 0 || !parsed.success)
    throw new ConfigError(
      `${source} is invalid: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      issues,
    );
  return parsed.data.exceptions;
}
