import { describe, expect, it } from 'vitest';
import { routes } from '../../functions/api/app.js';
import { ROUTE_DOCS } from '../../functions/api/openapi.js';
import { ERROR_CODES } from '../../functions/core/errors.js';
import { openApiText, writtenOpenApi } from '../../infra/openapi.js';

/** The OpenAPI document: generated from the routes and their zod schemas, and docs/openapi.json up to date. */

describe('the OpenAPI document', () => {
  it('documents every route, and nothing that is not one', () => {
    expect(Object.keys(ROUTE_DOCS).sort()).toEqual(routes.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('is what docs/openapi.json holds (npm run openapi writes it)', () => {
    expect(writtenOpenApi(), 'docs/openapi.json is stale: run npm run openapi').toBe(openApiText());
  });

  it("carries the routes' own zod schemas, their limits included, and every error code", () => {
    const doc = JSON.parse(openApiText());
    expect(doc.openapi).toBe('3.1.0');
    const produce = doc.paths['/queues/{queue}/messages'].post;
    expect(produce.requestBody.content['application/json'].schema.properties.messages).toMatchObject({
      minItems: 1,
      maxItems: 500,
    });
    const receive = doc.paths['/queues/{queue}/receive'].post.requestBody.content['application/json'].schema;
    expect(receive.properties.wait_seconds).toMatchObject({ minimum: 0, maximum: 20 });
    expect(doc.paths['/queues/{queue}/stats'].get.parameters.map((p: { name: string }) => p.name)).toEqual([
      'queue',
      'consumer',
    ]);
    expect(doc.paths['/health'].get.security).toEqual([]);
    expect(doc.components.schemas.Error.properties.error.properties.code.enum).toEqual([...ERROR_CODES]);
  });

  it('documents the answers from the same wire schemas: every field a delivery carries, and each body', () => {
    const doc = JSON.parse(openApiText());
    const answer = (path: string, method: string, status: string) =>
      doc.paths[path][method].responses[status].content?.['application/json'].schema;
    const delivery = answer('/queues/{queue}/receive', 'post', '200').properties.messages.items;
    expect(Object.keys(delivery.properties).sort()).toEqual(
      [
        'attempt',
        'attributes',
        'enqueued_at',
        'headers',
        'key',
        'lease_expires_at',
        'message_id',
        'payload',
        'receipt',
        'replay_id',
        'schema_ref',
        'traceparent',
      ].sort(),
    );
    // An answer may gain a field: its objects do not forbid others.
    expect(delivery.additionalProperties).toBeUndefined();
    expect(answer('/queues/{queue}/stats', 'get', '200').anyOf).toHaveLength(2);
    for (const [path, ops] of Object.entries(
      doc.paths as Record<string, Record<string, { responses: object }>>,
    ))
      for (const [method, op] of Object.entries(ops)) {
        const [status] = Object.keys(op.responses);
        if (status === '204' || path === '/openapi.json') continue;
        expect(answer(path, method, status as string), `${method} ${path}`).toBeDefined();
      }
  });
});
