import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidRangeError, LeaseqClient } from '../../client/index.js';
import { sleep } from '../../functions/core/async.js';
import { payloadBytes } from '../../functions/core/envelope.js';
import { HOURS_PER_MONTH, USAGE_PRICES } from '../../functions/core/prices.js';
import { buildServices } from '../../functions/services.js';
import { UsageRollups } from '../../functions/store/usage-rollups.js';
import { createSweepHandler } from '../../functions/sweep/app.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { queueApi, type Received } from '../helpers/queue-api.js';
import { FAST, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * GET /usage against a hand count: a known workload on two queues (produced, acked, dead-lettered,
 * left in flight), two samples of the sweep with nothing changing between them, and every figure
 * worked out from the workload alone.
 */

let t: TestRuntime;
let client: LeaseqClient;
const keys: Record<string, string> = {};

beforeAll(async () => {
  // The runtime's own sweep takes no sample in the test's time (one an hour): the test takes them.
  t = await startTestRuntime(
    { tenant: 'usage', queues: { alpha: { shards: 1 }, beta: { shards: 1 } } },
    undefined,
    { ...FAST, gaugeIntervalMs: 3_600_000 },
  );
  client = new LeaseqClient({ baseUrl: t.runtime.url, apiKey: t.runtime.adminKey, maxRetries: 0 });
  for (const scope of ['admin:alpha', 'produce:*']) {
    const res = await t.api('/keys', { body: { name: scope.replace(/[:*]/g, '_'), scopes: [scope] } });
    keys[scope] = res.body.key;
  }
});
afterAll(async () => {
  await t?.close();
});

const HOUR = 3_600_000;
const GB_HOUR = 1024 ** 3 * HOUR;
const bytes = (payload: unknown) => payloadBytes({ payload });

/** The sweep's gauges, sampling every queue's totals now. */
async function sample(): Promise<void> {
  const sweep = createSweepHandler(
    t.runtime.config,
    t.runtime.clients,
    { gaugeIntervalMs: 0, passIntervalMs: 0, reserveMs: 0 },
    new Logger({ logLevel: 'SILENT' }),
  );
  await sweep({}, lambdaContext('sweep', 1));
}

describe('usage', () => {
  const payloads = {
    'a-acked-1': 'a'.repeat(100),
    'a-acked-2': 'b'.repeat(300),
    'a-dead': 'd'.repeat(700),
    'a-held': 'h'.repeat(1500),
    'b-1': { n: 'x'.repeat(50) },
    'b-2': { n: 'y'.repeat(90) },
  };
  const of = (...ids: (keyof typeof payloads)[]) => ids.reduce((a, id) => a + bytes(payloads[id]), 0);
  const requests = {
    alpha: { produce: 0, receive: 0, ack: 0, nack: 0, extend: 0, other: 0 },
    beta: { produce: 0, receive: 0, ack: 0, nack: 0, extend: 0, other: 0 },
  };
  /** Each queue's two samples (the sweep samples one queue after the other). */
  const sampled = { alpha: { first: 0, last: 0 }, beta: { first: 0, last: 0 } };
  let first = 0;
  let last = 0;

  beforeAll(async () => {
    await sleep(300); // the runtime's first gauges (before any traffic, so no sample) are done
    const alpha = queueApi(t, 'alpha');
    const beta = queueApi(t, 'beta');
    const produce = async (q: 'alpha' | 'beta', ids: (keyof typeof payloads)[]) => {
      const results = await queueApi(t, q).produce(
        ids.map((id) => ({ message_id: id, payload: payloads[id] })),
      );
      expect(results.every((r) => r.status === 'accepted')).toBe(true);
      requests[q].produce++;
    };
    await produce('alpha', ['a-acked-1', 'a-acked-2', 'a-dead', 'a-held']);
    await produce('beta', ['b-1', 'b-2']);
    const got: Received[] = [];
    while (got.length < 4) {
      got.push(...(await alpha.receive({ max_messages: 10, wait_seconds: 1 })));
      requests.alpha.receive++;
    }
    const receipt = (id: string) => got.find((m) => m.message_id === id)?.receipt as string;
    await alpha.ack([receipt('a-acked-1'), receipt('a-acked-2')]);
    requests.alpha.ack++;
    expect((await alpha.nack({ receipt: receipt('a-dead'), retryable: false, error: 'boom' })).status).toBe(
      200,
    );
    requests.alpha.nack++;
    expect((await alpha.extend({ receipt: receipt('a-held'), lease_seconds: 600 })).status).toBe(200);
    requests.alpha.extend++;
    // Each stats answer writes the api's pending counts, its own request's first.
    expect((await alpha.stats()).dlq_depth).toBe(1);
    requests.alpha.other++;
    await beta.stats();
    requests.beta.other++;

    await sample();
    await sleep(1500);
    await sample();
    const samples = buildServices(t.runtime.config, t.runtime.clients).samples;
    for (const q of ['alpha', 'beta'] as const) {
      const { latest, previous } = await samples.get(q);
      sampled[q] = { first: previous?.at ?? 0, last: latest?.at ?? 0 };
      expect(sampled[q].last - sampled[q].first).toBeGreaterThanOrEqual(1500);
    }
    // Each queue's first sample is its hour's rollup, kept as its first (`origin`).
    const rollups = new UsageRollups(t.runtime.clients.doc, t.runtime.config.tableName);
    expect(await rollups.around('alpha', sampled.alpha.first)).toContainEqual(
      expect.objectContaining({ at: sampled.alpha.first, origin: true, produced: 4 }),
    );
    first = Math.min(sampled.alpha.first, sampled.beta.first);
    last = Math.max(sampled.alpha.last, sampled.beta.last);
  }, 60_000);

  it('answers what each queue used, by a hand count of the workload', async () => {
    const from = new Date(first - HOUR);
    const to = new Date(last + 60_000);
    const usage = await client.usage({ from, to });
    expect(usage.from).toBe(from.toISOString());
    const alpha = usage.queues.find((q) => q.queue === 'alpha');
    const beta = usage.queues.find((q) => q.queue === 'beta');
    expect(alpha).toMatchObject({
      produced: { messages: 4, bytes: of('a-acked-1', 'a-acked-2', 'a-dead', 'a-held') },
      consumed: { messages: 2, bytes: of('a-acked-1', 'a-acked-2') },
      requests: { ...requests.alpha, total: 6, throttled: 0 },
    });
    expect(beta).toMatchObject({
      produced: { messages: 2, bytes: of('b-1', 'b-2') },
      consumed: { messages: 0, bytes: 0 },
      requests: { ...requests.beta, total: 2, throttled: 0 },
    });
    // Nothing changed between the two samples: held bytes × the time between them.
    const held = (q: 'alpha' | 'beta') => (sampled[q].last - sampled[q].first) / GB_HOUR;
    expect(alpha?.stored_gb_hours.log).toBeCloseTo(of('a-held') * held('alpha'), 15);
    expect(alpha?.stored_gb_hours.dlq).toBeCloseTo(of('a-dead') * held('alpha'), 15);
    expect(beta?.stored_gb_hours).toEqual({
      log: expect.closeTo(of('b-1', 'b-2') * held('beta'), 15),
      dlq: 0,
    });
    // The first sample was each queue's first: the range starts from nothing.
    expect(alpha?.sampled_from).toBe(from.toISOString());
    expect(alpha?.sampled_to).toBe(new Date(sampled.alpha.last).toISOString());

    const perRequest = USAGE_PRICES.apiGatewayHttpRequest.usd + USAGE_PRICES.lambdaRequest.usd;
    expect(usage.total.requests.total).toBe(8);
    expect(usage.total.produced).toEqual({ messages: 6, bytes: of(...(Object.keys(payloads) as never[])) });
    expect(usage.total.cost_usd.requests).toBeCloseTo(8 * perRequest, 12);
    const gbMonths =
      (of('a-held', 'a-dead') * held('alpha') + of('b-1', 'b-2') * held('beta')) / HOURS_PER_MONTH;
    expect(usage.total.cost_usd.storage).toBeCloseTo(gbMonths * USAGE_PRICES.dynamodbStorageGbMonth.usd, 15);
    expect(usage.accuracy).toMatchObject({
      exact: ['produced', 'consumed', 'requests'],
      estimated: ['stored_gb_hours', 'cost_usd'],
    });
  });

  it('answers nothing for a range after the last sample, and one queue with ?queue=', async () => {
    const later = await client.usage({
      from: new Date(last + 1),
      to: new Date(last + 2 * HOUR),
      queue: 'beta',
    });
    expect(later.queues.map((q) => q.queue)).toEqual(['beta']);
    expect(later.total).toMatchObject({ produced: { messages: 0 }, requests: { total: 0 } });
  });

  it('lets admin:<queue> see its queue with ?queue=, and no more', async () => {
    const range = `from=${new Date(first - HOUR).toISOString()}&to=${new Date(last + 1000).toISOString()}`;
    const as = (key: string, query: string) => t.api(`/usage?${range}${query}`, { key });
    const own = await as(keys['admin:alpha'] as string, '&queue=alpha');
    expect(own.status).toBe(200);
    expect(own.body.queues.map((q: { queue: string }) => q.queue)).toEqual(['alpha']);
    for (const [key, query] of [
      [keys['admin:alpha'], ''],
      [keys['admin:alpha'], '&queue=beta'],
      [keys['produce:*'], '&queue=alpha'],
    ] as const) {
      const res = await as(key as string, query);
      expect(res.status, query).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    expect((await t.api(`/usage?${range}`, { key: null })).status).toBe(401);
    const unknown = await t.api(`/usage?${range}&queue=nope`);
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'QUEUE_NOT_FOUND']);
  });

  it('refuses a bad range with a stable code and a message', async () => {
    const refused = async (query: string) => {
      const res = await t.api(`/usage?${query}`);
      expect(res.status, query).toBe(400);
      return res.body.error;
    };
    expect(await refused('from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z')).toMatchObject({
      code: 'INVALID_RANGE',
      message: expect.stringContaining('before'),
    });
    expect(await refused('from=2026-01-01T00:00:00Z&to=2026-04-05T00:00:00Z')).toMatchObject({
      code: 'INVALID_RANGE',
      details: { max_days: 93 },
    });
    const future = new Date(Date.now() + HOUR).toISOString();
    expect(await refused(`from=${future}&to=${new Date(Date.now() + 2 * HOUR).toISOString()}`)).toMatchObject(
      {
        code: 'INVALID_RANGE',
      },
    );
    expect(await refused('from=yesterday&to=2026-01-01T00:00:00Z')).toMatchObject({
      code: 'INVALID_REQUEST',
    });
    expect(await refused('to=2026-01-01T00:00:00Z')).toMatchObject({ code: 'INVALID_REQUEST' });
    await expect(
      client.usage({ from: '2026-03-02T00:00:00Z', to: '2026-03-01T00:00:00Z' }),
    ).rejects.toBeInstanceOf(InvalidRangeError);
  });
});
