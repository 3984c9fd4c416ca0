import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../functions/core/async.js';
import { AlarmStates } from '../../functions/store/alarm-states.js';
import { createSweepHandler } from '../../functions/sweep/app.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The sweep evaluates the queues' alarms on its gauge passes, from the running totals the api
 * writes, and tells of each change (here its log; on AWS the alarm topic too): a queue refused
 * over its quota, and handlers held past half their lease.
 */

let t: TestRuntime;
/** What the sweep told, as `<state>: <alarm name>`. */
const told: string[] = [];

/** A logger that keeps the sweep's alarm lines. */
class TellingLogger extends Logger {
  override warn(message: unknown, ...rest: unknown[]): void {
    if (typeof message === 'string' && message.startsWith('ALARM: ')) told.push(message);
    else super.warn(message as string, ...(rest as []));
  }
  override info(message: unknown, ...rest: unknown[]): void {
    if (typeof message === 'string' && message.startsWith('OK: ')) told.push(message);
    else super.info(message as string, ...(rest as []));
  }
}

let sweep: ReturnType<typeof createSweepHandler>;
/** One gauge pass of a sweep whose gauges run at every invocation. */
const gaugePass = async () => {
  await sweep({}, lambdaContext('sweep', 1));
};

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'alarmed',
    queues: {
      limited: { shards: 1, rate_limits: { produce: { requests_per_sec: 1 } } },
      slow: { shards: 1, lease_seconds: 6 },
    },
  });
  sweep = createSweepHandler(
    t.runtime.config,
    t.runtime.clients,
    { gaugeIntervalMs: 0, passIntervalMs: 0, reserveMs: 0 },
    new TellingLogger({ logLevel: 'SILENT' }),
  );
  // The first pass reads the totals the next ones' counts are measured from.
  await gaugePass();
});
afterAll(async () => {
  await t?.close();
});

const states = () => new AlarmStates(t.runtime.clients.doc, t.runtime.config.tableName).get();

describe("the sweep's queue alarms", () => {
  it('fire on the pass after a produce refused over the quota, and stay firing on the passes without one', async () => {
    const limited = queueApi(t, 'limited');
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push(
        (await t.api('/queues/limited/messages', { body: { messages: [{ payload: i }] } })).status,
      );
    expect(statuses).toContain(429);
    // The api writes its totals about once a second, with the next count it makes.
    await sleep(1100);
    await limited.produce([{ payload: 'flush' }]);
    await gaugePass();
    expect(told).toContain('ALARM: leaseq-alarmed/limited/quota-throttled');
    expect((await states()).alarms['leaseq-alarmed/limited/quota-throttled']).toMatchObject({ firing: true });
    // It clears after 5 minutes without a refusal (test/unit/queue-alarms.test.ts), not at the next pass.
    await gaugePass();
    expect(told.filter((m) => m.endsWith('/limited/quota-throttled'))).toEqual([
      'ALARM: leaseq-alarmed/limited/quota-throttled',
    ]);
    expect((await states()).alarms['leaseq-alarmed/limited/quota-throttled']).toMatchObject({
      firing: true,
      under: expect.any(Number),
    });
    // What an operator reads of it: GET /alarms, for admin:* keys only.
    const listed = await t.api('/alarms');
    expect(listed.status).toBe(200);
    // (DynamoDB Local reports the table's point-in-time recovery off: a drift alarm beside it.)
    expect(listed.body.alarms.filter((a: { kind: string }) => a.kind !== 'drift')).toEqual([
      {
        name: 'leaseq-alarmed/limited/quota-throttled',
        queue: 'limited',
        kind: 'quota-throttled',
        state: 'ALARM',
        since: expect.any(String),
        pages: false,
        description: expect.stringMatching(/^For the producing team: Requests to limited were refused/),
      },
    ]);
    const producer = await t.api('/keys', { body: { name: 'producer', scopes: ['produce:limited'] } });
    const refused = await t.api('/alarms', { key: producer.body.key });
    expect([refused.status, refused.body.error.code]).toEqual([403, 'FORBIDDEN']);
    // The other queue's quota alarm was not touched by this one's.
    expect(told.filter((m) => m.endsWith('/slow/quota-throttled'))).toEqual([]);
  });

  it('fire when handlers ack past half their lease, from what the api counted of each ack', async () => {
    const slow = queueApi(t, 'slow');
    await slow.produce(Array.from({ length: 5 }, (_, i) => ({ payload: i })));
    const got = await slow.receiveAll(5, 10_000);
    expect(got).toHaveLength(5);
    // Past half the 6 s lease, well before its end.
    await sleep(3200);
    expect((await slow.ack(got.map((m) => m.receipt))).every((r) => r.status === 'acked')).toBe(true);
    await sleep(1100);
    await slow.produce([{ payload: 'flush' }]);
    await gaugePass();
    expect(told).toContain('ALARM: leaseq-alarmed/slow/handler-duration');
    const stats = await slow.stats();
    expect(stats.acked_total).toBe(5);
  });
});
