/**
 * Produce's check of a payload against its queue's schema, with the validator (Ajv, ~130 KB)
 * imported on the first message of a queue that has a schema: `./payload-validator.js` is a file
 * of its own beside the api's bundle (infra/leaseq-function.ts), which a tenant without schemas
 * never loads.
 */
let validator: Promise<typeof import('./payload-validator.js')> | undefined;

/** What is wrong with `payload` under `schema`, as one sentence; undefined when it matches. */
export async function payloadProblem(
  schema: Record<string, unknown>,
  payload: unknown,
): Promise<string | undefined> {
  validator ??= import('./payload-validator.js');
  return (await validator).payloadProblem(schema, payload);
}
