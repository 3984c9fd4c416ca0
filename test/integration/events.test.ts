import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, assert, beforeAll, describe, expect, it } from 'vitest';
import { type ApiHandler, createApiHandler, routes } from '../../functions/api/app.js';
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

function expectBadReceipt(body: Answer['body']): void {
  expect(body.error).toMatchObject({ code: 'INVALID_REQUEST', details: { issues: [{ path: 'receipt' }] } });
}

let t: TestRuntime;
let handler: ApiHandler;

const expectations: Record<string, Expectation> = {
  // The contract, public like /health: the same document as docs/openapi.json.
  'openapi-document.json': {
    status: 200,
    check: async ({ body }) => {
      expect(body.openapi).toBe('3.1.0');
      expect(Object.keys(body.paths)).toContain('/queues/{queue}/messages');
    },
  },
  // The sample key's scopes are the admin's: every queue of the sample tenant, every action.
  'queues.json': {
    status: 200,
    check: async ({ body }) =>
      expect(body.queues).toEqual([
        { name: 'jobs', ordered: false, shards: 2, consumers: [], actions: ['produce', 'consume', 'admin'] },
        { name: 'ledger', ordered: true, shards: 2, consumers: [], actions: ['produce', 'consume', 'admin'] },
      ]),
  },
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
  // The samples below run against one runtime in file order, so each expectation holds
  // whether or not the samples before it ran (produce.json's message may be there or not).
  'receive.json': {
    status: 200,
    async check({ body }) {
      expect(body.messages).toEqual(expect.any(Array));
      for (const m of body.messages) expect(m).toMatchObject({ receipt: expect.any(String), attempt: 1 });
    },
  },
  // The sample receipt is shaped like one but signed by no runtime: it can never be current.
  'ack.json': {
    status: 200,
    async check({ body }, event) {
      const [receipt] = JSON.parse(event.body ?? '').receipts;
      expect(body).toEqual({ results: [{ receipt, status: 'invalid_receipt' }] });
    },
  },
  // Calling off a poll nobody runs is harmless: it answers the same.
  'receive-cancel.json': { status: 204, check: async ({ body }) => expect(body).toBeUndefined() },
  // The rest of their bodies is valid: the 400 is the receipt's.
  'nack.json': { status: 400, check: async ({ body }) => expectBadReceipt(body) },
  'extend.json': { status: 400, check: async ({ body }) => expectBadReceipt(body) },
  // No sample dead-letters a message, so the DLQ is empty and the dead letter they name unknown.
  'dlq-list.json': {
    status: 200,
    check: async ({ body }) => expect(body).toEqual({ messages: [], next_cursor: null }),
  },
  'dlq-get.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('MESSAGE_NOT_FOUND'),
  },
  'dlq-errors.json': {
    status: 200,
    check: async ({ body }) => expect(body).toEqual({ groups: [], grouped: 0, truncated: false }),
  },
  'dlq-purge.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('MESSAGE_NOT_FOUND'),
  },
  'trace.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('MESSAGE_NOT_FOUND'),
  },
  // Nothing matches the filter, so the redrive is done as soon as it starts.
  'redrive.json': {
    status: 202,
    check: async ({ body }) =>
      expect(body).toMatchObject({ redrive_id: expect.any(String), status: 'done', moved: 0, remaining: 0 }),
  },
  // Counting starts nothing: the DLQ is empty, so nothing matches.
  'redrive-matching.json': {
    status: 200,
    check: async ({ body }) => expect(body).toEqual({ matching: 0 }),
  },
  'redrive-get.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('NOT_FOUND'),
  },
  'redrive-cancel.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('NOT_FOUND'),
  },
  // The sample's window is long past the log's retention: refused, saying from when it could start.
  'replay.json': {
    status: 400,
    check: async ({ body }) =>
      expect(body.error).toMatchObject({
        code: 'OUTSIDE_RETENTION',
        details: { oldest_replayable: expect.any(String) },
      }),
  },
  'replay-get.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('NOT_FOUND'),
  },
  'replay-cancel.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('NOT_FOUND'),
  },
  // The DLQ is empty: the extension is done as it starts, with nothing to keep longer.
  'retention.json': {
    status: 202,
    check: async ({ body }) =>
      expect(body).toMatchObject({
        retention_id: expect.any(String),
        status: 'done',
        dlq_retention_hours: 720,
        total: 0,
        extended: 0,
      }),
  },
  'retention-get.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('NOT_FOUND'),
  },
  'retention-cancel.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('NOT_FOUND'),
  },
  // The SQS endpoint: a request no SigV4 signature covers is refused in SQS's own terms.
  'sqs-unsigned.json': {
    status: 403,
    check: async ({ body }) =>
      expect(body).toMatchObject({ __type: 'com.amazonaws.sqs#MissingAuthenticationToken' }),
  },
  'parked-keys.json': {
    status: 200,
    check: async ({ body }) => expect(body).toEqual({ keys: [] }),
  },
  'skip-key.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('NOT_FOUND'),
  },
  // Paused, then resumed here, so no other sample meets a paused queue whatever the order.
  'pause.json': {
    status: 200,
    async check({ body }) {
      expect(body.paused).toMatchObject({ reason: 'ledger writer rolled back' });
      expect((await t.api('/queues/ledger/resume', { body: {} })).status).toBe(200);
    },
  },
  'resume.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('NOT_FOUND'),
  },
  'audit.json': {
    status: 200,
    check: async ({ body }) => expect(body.entries).toEqual(expect.any(Array)),
  },
  'stats.json': {
    status: 200,
    check: async ({ body }) => expect(body).toMatchObject({ dlq_depth: 0, parked_keys: 0 }),
  },
  // November 2026 for every queue of the sample tenant (admin:*), and their total.
  // A fresh runtime's sweep has found nothing above a threshold.
  'alarms.json': {
    status: 200,
    check: async ({ body }) => expect(body).toEqual({ alarms: [] }),
  },
  'usage.json': {
    status: 200,
    check: async ({ body }) => {
      expect(body.queues.map((q: { queue: string }) => q.queue)).toEqual(['jobs', 'ledger']);
      expect(body.total.requests.total).toBe(
        body.queues.reduce((a: number, q: { requests: { total: number } }) => a + q.requests.total, 0),
      );
      expect(body.accuracy.estimated).toEqual(['stored_gb_hours', 'cost_usd']);
    },
  },
  // The sample tenant's jobs declares no Lambda consumer.
  'stats-consumer.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('CONSUMER_NOT_FOUND'),
  },
  'key-create.json': {
    status: 201,
    async check({ body }, event, again) {
      const { name, scopes } = JSON.parse(event.body ?? '');
      expect(body).toMatchObject({ name, scopes, key: expect.stringMatching(/^lq_/), revoked_at: null });
      // A fixed name: the sample creates its key once per runtime.
      expect((await again()).body.error.code).toBe('CONFLICT');
    },
  },
  'key-list.json': {
    status: 200,
    check: async ({ body }) => expect(body.keys).toEqual(expect.any(Array)),
  },
  // A name no key has: revoking a key key-create.json made would depend on the order.
  'key-revoke.json': {
    status: 404,
    check: async ({ body }) => expect(body.error.code).toBe('NOT_FOUND'),
  },
  // SQS credentials with the key, answered once: GET /keys shows their id, never the secret.
  'key-create-sqs.json': {
    status: 201,
    async check({ body }, event, again) {
      const { name, scopes } = JSON.parse(event.body ?? '');
      expect(body).toMatchObject({
        name,
        scopes,
        key: expect.stringMatching(/^lq_/),
        sqs_credentials: {
          access_key_id: expect.stringMatching(/^LQIA[A-Z2-7]{16}$/),
          secret_access_key: expect.stringMatching(/^[A-Za-z0-9+/]{40}$/),
        },
      });
      expect(body.sqs_access_key_id).toBe(body.sqs_credentials.access_key_id);
      const listed = await t.api('/keys');
      expect(listed.body.keys.find((k: { name: string }) => k.name === name)).toMatchObject({
        sqs_access_key_id: body.sqs_credentials.access_key_id,
      });
      expect(JSON.stringify(listed.body)).not.toContain(body.sqs_credentials.secret_access_key);
      expect((await again()).body.error.code).toBe('CONFLICT');
    },
  },
  // A name no key has, as key-revoke.json: credentials for key-create.json's key would depend on the order.
  'key-sqs-credentials.json': {
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
  // JSON, or the AWS JSON 1.0 of the SQS endpoint; a 204 has no body to type.
  if (res.statusCode !== 204)
    expect(res.headers?.['content-type']).toMatch(/^application\/(json|x-amz-json-1\.0)$/);
  return { status: res.statusCode ?? 200, body: res.body ? JSON.parse(res.body) : undefined };
}

describe('sample API Gateway events', () => {
  it('has an expectation for every sample and a sample for every expectation', () => {
    expect(samples.length).toBeGreaterThan(0);
    expect(Object.keys(expectations).sort()).toEqual(samples);
  });

  it.each(routes.map((r) => [`${r.method} ${r.path}`, r] as const))('%s has a sample', (_, route) => {
    // `{param}` stands for one path segment, as the router reads it.
    const pattern = new RegExp(`^${route.path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    const matching = samples.filter((file) => {
      const event = readSample(file);
      return event.requestContext.http.method === route.method && pattern.test(event.rawPath);
    });
    expect(matching, `add a sample for ${route.method} ${route.path} to events/apigw/`).not.toEqual([]);
  });

  it.each(samples)('%s is shaped like an HTTP API v2 event', (file) => {
    const event = readSample(file);
    expect(event).toMatchObject({ version: '2.0', isBase64Encoded: false });
    expect(event.requestContext.routeKey).toBe(event.routeKey);
    expect(event.requestContext.stage).toBe('$default');
    expect(event.requestContext.http.path).toBe(event.rawPath);
    expect(event.queryStringParameters ?? {}).toEqual(
      Object.fromEntries(new URLSearchParams(event.rawQueryString)),
    );
    // Only /health and the SQS endpoint (POST /) have routes of their own; the rest arrive on the
    // catch-all with the path in `proxy`.
    if (event.routeKey === 'ANY /{proxy+}')
      expect(event.pathParameters).toEqual({ proxy: event.rawPath.slice(1) });
    else expect(event.routeKey).toBe(`${event.requestContext.http.method} ${event.rawPath}`);
    expect(event.requestContext.time).toMatch(/^\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/);
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
