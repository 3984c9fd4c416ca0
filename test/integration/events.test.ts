import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, assert, beforeAll, describe, expect, it } from 'vitest';
import { type ApiHandler, createApiHandler } from '../../functions/api/app.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { type ApiAnswer, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/** Every sample event in events/apigw/ through the api handler, invoked as Lambda would. */

const SAMPLE_KEY = 'sample-admin-key-0000000000';
const SAMPLES_DIR = fileURLToPath(new URL('../../events/apigw/', import.meta.url));
// Read at collection time, so a new sample gets its own test without touching this file.
const samples = readdirSync(SAMPLES_DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();

type Answer = Pick<ApiAnswer, 'status' | 'body'>;

interface Expectation {
  status: number;
  /** What else the answer and the runtime's state must show; `again` invokes the sample once more. */
  check(answer: Answer, event: APIGatewayProxyEventV2, again: () => Promise<Answer>): Promise<void>;
}

let t: TestRuntime;
let handler: ApiHandler;

const expectations: Record<string, Expectation> = {
  'health.json': {
    status: 200,
    check: async ({ body }) => expect(body).toEqual({ status: 'ok' }),
  },
  'produce.json': {
    status: 200,
    async check({ body }, event, again) {
      const [sent] = JSON.parse(event.body ?? '').messages;
      // A fixed id is what makes a second invocation a duplicate rather than a second message.
      expect(sent.message_id).toEqual(expect.any(String));
      expect(body).toEqual({ results: [{ message_id: sent.message_id, status: 'accepted' }] });
      expect(await again()).toEqual({
        status: 200,
        body: { results: [{ message_id: sent.message_id, status: 'duplicate' }] },
      });
      const stored = (await t.records('jobs')).filter((r) => r.envelope.message_id === sent.message_id);
      expect(stored).toHaveLength(1);
      expect(stored[0]?.partitionKey).toBe(sent.key);
      expect(stored[0]?.envelope).toMatchObject({
        queue: 'jobs',
        key: sent.key,
        payload: sent.payload,
        headers: sent.headers,
      });
    },
  },
  'produce-invalid.json': {
    status: 400,
    async check({ body }, event) {
      expect(body.error.code).toBe('INVALID_REQUEST');
      const paths = body.error.details.issues.map((i: { path: string }) => i.path).sort();
      expect(paths).toEqual(['messages[1].delay_seconds', 'messages[1].message_id', 'messages[1].priority']);
      // The batch's first message is valid, yet a rejected request appends nothing.
      const [valid] = JSON.parse(event.body ?? '').messages;
      const ids = (await t.records('jobs')).map((r) => r.envelope.message_id);
      expect(ids).not.toContain(valid.message_id);
    },
  },
  'not-found.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('NOT_FOUND'),
  },
};

beforeAll(async () => {
  t = await startTestRuntime(undefined, SAMPLE_KEY);
  handler = createApiHandler(
    t.runtime.config,
    t.runtime.clients,
    new Logger({ serviceName: 'leaseq-api', logLevel: 'SILENT' }),
  );
});
afterAll(async () => {
  await t?.close();
});

const readSample = (file: string): APIGatewayProxyEventV2 =>
  JSON.parse(readFileSync(`${SAMPLES_DIR}${file}`, 'utf8'));

async function invoke(event: APIGatewayProxyEventV2): Promise<Answer> {
  // Lambda hands every invocation a fresh event; the router writes pathParameters into it.
  const res = await handler(structuredClone(event), lambdaContext('api'));
  expect(res.headers?.['content-type']).toBe('application/json');
  return { status: res.statusCode ?? 200, body: res.body ? JSON.parse(res.body) : undefined };
}

describe('sample API Gateway events', () => {
  it('has an expectation for every sample and a sample for every expectation', () => {
    expect(samples.length).toBeGreaterThan(0);
    expect(Object.keys(expectations).sort()).toEqual(samples);
  });

  it.each(samples)('%s is shaped like an HTTP API v2 event', (file) => {
    const event = readSample(file);
    expect(event).toMatchObject({ version: '2.0', isBase64Encoded: false, rawQueryString: '' });
    expect(event.requestContext.routeKey).toBe(event.routeKey);
    expect(event.requestContext.stage).toBe('$default');
    expect(event.requestContext.http.path).toBe(event.rawPath);
    for (const name of Object.keys(event.headers)) expect(name).toBe(name.toLowerCase());
    if (event.body !== undefined) {
      expect(event.headers['content-length']).toBe(String(Buffer.byteLength(event.body)));
    }
  });

  it.each(samples)('%s gets the answer it is meant to produce', async (file) => {
    const expected = expectations[file];
    assert(expected, `${file} has no expectation in test/integration/events.test.ts`);
    const event = readSample(file);
    const answer = await invoke(event);
    expect(answer.status).toBe(expected.status);
    await expected.check(answer, event, () => invoke(event));
  });
});
