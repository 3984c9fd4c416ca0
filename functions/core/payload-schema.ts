import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ConfigError, type TenantConfig } from './config.js';

/**
 * A queue's JSON Schema for its payloads (config `schema`): checked where the tenant file is
 * loaded (synth, the local runtime), compiled once per schema and run on every produced message. Ajv, the well-kept validator
 * of JSON Schema (draft-07 by default), with the standard formats (date-time, email, uuid, ...).
 */

// ajv-formats is CommonJS with its function as `default` under NodeNext's interop.
const addFormats = addFormatsModule as unknown as { default: (ajv: Ajv) => Ajv };

let shared: Ajv | undefined;
const compiled = new WeakMap<object, ValidateFunction>();

function ajv(): Ajv {
  if (!shared) {
    shared = new Ajv({ allErrors: true });
    addFormats.default(shared);
  }
  return shared;
}

function validatorOf(schema: Record<string, unknown>): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv().compile(schema);
    compiled.set(schema, validate);
  }
  return validate;
}

/** Refuses a tenant whose payload schemas Ajv cannot compile (an unknown keyword, a bad type), each by its path. */
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

/** What is wrong with `payload` under `schema`, as one sentence (`payload/amount must be number`); undefined when it matches. */
export function payloadProblem(schema: Record<string, unknown>, payload: unknown): string | undefined {
  const validate = validatorOf(schema);
  if (validate(payload)) return undefined;
  return ajv().errorsText(validate.errors, { dataVar: 'payload' });
}
