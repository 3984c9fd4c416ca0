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
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * How long pull deliveries are held (delivery to ack or nack), published by the api function as
 * `handler_seconds` per queue, each value kept: the handler-duration alarm watches their p99.
 */

const KEY = 'duration-admin-key-000000000';
let t: TestRuntime;
let api: ApiHandler;
const metrics = new CapturedMetrics(metricsOptions(SERVICE.api, 'test'));

beforeAll(async () => {
  t = await startTestRuntime(undefined, KEY);
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

const heldValues = () =>
  metrics.documents
    .filter((d) => (d as Record<string, unknown>).queue === 'jobs')
    .flatMap((d) => [(d as Record<string, unknown>).handler_seconds ?? []].flat() as number[]);

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
