import { ConfigError, type TenantConfig } from './config.js';
import { validatorOf } from './payload-validator.js';

/** Refuses a tenant whose payload schemas Ajv cannot compile (an unknown keyword, a bad type), each by its path: where the tenant file is loaded (synth, the local runtime). */
export function checkPayloadSchemas(tenant: TenantConfig, source = 'tenant file'): void {
  const issues = Object.entries(tenant.queues).flatMap(([name, q]) => {
    if (!q.schema) return [];
    try {
      validatorOf(q.schema);
      return [];
    } catch (err) {
      return [{ path: `queues.${name}.schema`, message: err instanceof Error ? err.message : String(err) }];
    }
  });
  if (issues.length)
    throw new ConfigError(
      `${source} is invalid: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      issues,
    );
}
