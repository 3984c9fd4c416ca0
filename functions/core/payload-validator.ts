import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { perObject } from './per-object.js';

/**
 * A queue's JSON Schema for its payloads (config `schema`), compiled once per schema and run on
 * every produced message. Ajv, the well-kept validator of JSON Schema (draft-07 by default), with
 * the standard formats (date-time, email, uuid, ...). The api loads it on first use
 * (core/payload-check.ts), from a file beside its bundle (infra/leaseq-function.ts): a tenant
 * without schemas never parses it.
 */

// ajv-formats is CommonJS with its function as `default` under NodeNext's interop.
const addFormats = addFormatsModule as unknown as { default: (ajv: Ajv) => Ajv };

let shared: Ajv | undefined;

function ajv(): Ajv {
  if (!shared) {
    shared = new Ajv({ allErrors: true });
    addFormats.default(shared);
  }
  return shared;
}

/** The schema's validator; throws what Ajv cannot compile (an unknown keyword, a bad type). */
export const validatorOf: (schema: Record<string, unknown>) => ValidateFunction = perObject((schema) =>
  ajv().compile(schema),
);

/** What is wrong with `payload` under `schema`, as one sentence (`payload/amount must be number`); undefined when it matches. */
export function payloadProblem(schema: Record<string, unknown>, payload: unknown): string | undefined {
  const validate = validatorOf(schema);
  if (validate(payload)) return undefined;
  return ajv().errorsText(validate.errors, { dataVar: 'payload' });
}
