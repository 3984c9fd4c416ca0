import { readFileSync } from 'node:fs';
import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiHandler, createApiHandler } from '../../functions/api/app.js';
import { sleep } from '../../functions/core/async.js';
import { metricsOptions, SERVICE } from '../../functions/observability/metrics.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { CapturedMetrics } from '../helpers/captured-metrics.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, TEST_TENANT, type TestRuntime } from '../helpers/runtime.js';

/**
 * What the api function publishes for the alarms, read back from its EMF documents: how long pull
 * deliveries are held (delivery to ack or nack) as `handler_seconds`, each value kept (the
 * handler-duration alarm watches their p99); the receipts that came back too late, which the
 * stale-receipt-rate alarm sets beside the acks; and requests refused over a quota (quota-throttled).
 */

const KEY = 'duration-admin-key-000000000';
let t: TestRuntime;
let api: ApiHandler;
const metrics = new CapturedMetrics(metricsOptions(SERVICE.api, 'test'));

beforeAll(async () => {
  t = await startTestRuntime(
    {
      ...TEST_TENANT,
      queues: {
        ...TEST_TENANT.queues,
        limited: { shards: 1, rate_limits: { produce: { requests_per_sec: 1 } } },
      },
    },
    KEY,
  );
  api = createApiHandler(t.runtime.config, t.runtime.clients, new Logger({ logLevel: 'SILENT' }), metrics);
});
afterAll(async () => {
  await t?.close();
});

/** The sample ack event of events/apigw/, sent to `path` with `body`, through the captured api. */
async function post(path: string, body: unknown): Promise<number> {
  const event = JSON.parse(
    readFileSync(new URL('../../events/apigw/ack.json', import.meta.url), 'utf8'),
  ) as APIGatewayProxyEventV2;
  const text = JSON.stringify(body);
  Object.assign(event, { rawPath: path, body: text, pathParameters: { proxy: path.slice(1) } });
  event.requestContext.http.path = path;
  event.headers.authorization = `Bearer ${KEY}`;
  event.headers['content-length'] = String(Buffer.byteLength(text));
  return (await api(event, lambdaContext('api'))).statusCode ?? 200;
}

/** Every value of `name` the api published for `queue` (and for one API key's requests to it). */
const published = (name: string, queue = 'jobs', apiKey?: string) =>
  metrics.documents
    .filter((d) => (d as Record<string, unknown>).queue === queue)
    .filter((d) => (d as Record<string, unknown>).api_key === apiKey)
    .flatMap((d) => [(d as Record<string, unknown>)[name] ?? []].flat() as number[]);
const heldValues = () => published('handler_seconds');
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

describe('handler_seconds of a pull queue', () => {
  it('is the time from delivery to ack, and to nack, one value per delivery', async () => {
    const q = queueApi(t, 'jobs');
    await q.produce([
      { message_id: 'h-1', payload: 1 },
      { message_id: 'h-2', payload: 2 },
    ]);
    const got = await q.receiveAll(2, 10_000);
    expect(got).toHaveLength(2);
    await sleep(400);
    const [first, second] = got as [(typeof got)[number], (typeof got)[number]];
    expect(await post('/queues/jobs/ack', { receipts: [first.receipt] })).toBe(200);
    await sleep(300);
    expect(await post('/queues/jobs/nack', { receipt: second.receipt, error: 'slow' })).toBe(200);
    metrics.publishStoredMetrics();
    const values = heldValues();
    expect(values).toHaveLength(2);
    expect(values[0]).toBeGreaterThanOrEqual(0.4);
    expect(values[1]).toBeGreaterThanOrEqual(0.7);
    expect(Math.max(...values)).toBeLessThan(30);
  });
});

describe('stale_receipts of a pull queue', () => {
  it('counts an ack, a nack and an extend that came after the lease ran out, beside the acks', async () => {
    const q = queueApi(t, 'jobs');
    await q.produce([
      { message_id: 's-late', payload: 1 },
      { message_id: 's-on-time', payload: 2 },
    ]);
    const got = await q.receiveAll(2, 10_000, { lease_seconds: 1 });
    const late = got.find((m) => m.message_id === 's-late');
    const onTime = got.find((m) => m.message_id === 's-on-time');
    expect(await post('/queues/jobs/ack', { receipts: [onTime?.receipt] })).toBe(200);
    await sleep(1100);
    await t.runtime.sweep.fire();
    metrics.publishStoredMetrics();
    const [staleBefore, ackedBefore] = [sum(published('stale_receipts')), sum(published('acked'))];
    expect(await post('/queues/jobs/ack', { receipts: [late?.receipt] })).toBe(200);
    expect(await post('/queues/jobs/nack', { receipt: late?.receipt })).toBe(409);
    expect(await post('/queues/jobs/extend', { receipt: late?.receipt, lease_seconds: 5 })).toBe(409);
    metrics.publishStoredMetrics();
    expect(sum(published('stale_receipts')) - staleBefore).toBe(3);
    expect(sum(published('acked')) - ackedBefore).toBe(0);
    expect(ackedBefore).toBeGreaterThanOrEqual(1);
  });
});

describe('throttled', () => {
  it('counts each produce refused over the queue quota (429), and not the ones accepted', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push(await post('/queues/limited/messages', { messages: [{ payload: { i } }] }));
    metrics.publishStoredMetrics();
    const refused = statuses.filter((s) => s === 429).length;
    expect(refused).toBeGreaterThanOrEqual(1);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    expect(sum(published('throttled', 'limited'))).toBe(refused);
    expect(sum(published('unavailable', 'limited'))).toBe(0);
    // And by the key refused, in the metrics and in the queue's stats.
    expect(sum(published('throttled', 'limited', 'local-admin'))).toBe(refused);
    // The api instance writes its totals about once a second, with the next count it makes.
    await sleep(1100);
    expect(await post('/queues/limited/messages', { messages: [{ payload: 'later' }] })).toBe(200);
    const stats = await queueApi(t, 'limited').stats();
    expect(stats.throttled_total).toBe(refused);
    expect(stats.throttled_by_key).toEqual({ 'local-admin': refused });
  });
});
