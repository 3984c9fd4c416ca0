import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../functions/core/async.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The drain estimate of stats (a backlog that would outlive the retention): the sweep samples the
 * totals with its gauges (here every second instead of a minute), stats sets the backlog beside
 * the rates between the last two samples.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({ tenant: 'drain', queues: { jobs: { shards: 1 } } }, undefined, {
    sweepIntervalMs: 100,
    idlePollMs: 20,
    gaugeIntervalMs: 1000,
  });
});
afterAll(async () => {
  await t?.close();
});

type Drain = Awaited<ReturnType<ReturnType<typeof queueApi>['stats']>>['drain'];

/** Stats' drain until `state`, or the last one seen after `ms`. */
async function drainUntil(q: ReturnType<typeof queueApi>, state: string, ms: number): Promise<Drain> {
  const deadline = Date.now() + ms;
  for (;;) {
    const drain = (await q.stats()).drain;
    if (drain.state === state || Date.now() > deadline) return drain;
    await sleep(200);
  }
}

describe('stats drain', () => {
  it('says not draining while nothing is acked, draining with an ETA while acks outpace produce, then empty', async () => {
    const q = queueApi(t, 'jobs');
    expect((await q.stats()).drain.state).toMatch(/^(empty|unknown)$/);
    await q.produce(Array.from({ length: 60 }, (_, n) => ({ payload: { n } })));
    const stuck = await drainUntil(q, 'not_draining', 5000);
    expect(stuck).toMatchObject({ state: 'not_draining', eta_seconds: null, ack_per_second: 0 });

    // Acks at about 12 a second, nothing produced: draining, with an ETA under the 5 s left.
    let left = 60;
    const done = (async () => {
      while (left > 0) {
        const got = await q.receive({ max_messages: 5, wait_seconds: 1 });
        if (got.length) await q.ack(got.map((m) => m.receipt));
        left -= got.length;
        await sleep(400);
      }
    })();
    const draining = await drainUntil(q, 'draining', 4000);
    expect(left).toBeGreaterThan(0);
    expect(draining.state).toBe('draining');
    expect(draining.ack_per_second).toBeGreaterThan(0);
    expect(draining.produce_per_second).toBe(0);
    expect(draining.eta_seconds).toBeGreaterThan(0);
    expect(draining.eta_seconds).toBeLessThan(60);
    await done;
    expect(await drainUntil(q, 'empty', 3000)).toMatchObject({ state: 'empty', eta_seconds: 0 });
  }, 30_000);
});
