import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LagCatchUp } from '../../functions/admission/lag-catch-up.js';
import { ShardReader } from '../../functions/log/shard-reader.js';
import { buildServices } from '../../functions/services.js';
import { queueApi, type Received } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * Queues on one stream: dispatch reads each shard once for all of them, and a queue whose window
 * is full lags (store/admission-lags.ts) instead of holding the others back; the sweep then
 * admits its records from the log, in order, none lost and none twice.
 */

let t: TestRuntime;
let started: number;

beforeAll(async () => {
  started = Date.now();
  t = await startTestRuntime({
    tenant: 'share',
    streams: { shared: { shards: 1 } },
    queues: {
      // Dispatch alone admits these, so their records wait in the one shard they share.
      full: { window_size: 5, fast_admission: 'off' },
      stuck: { window_size: 5, fast_admission: 'off' },
      free: { fast_admission: 'off' },
      sorted: { ordered: true, window_size: 4, fast_admission: 'off' },
      narrow: { window_size: 5, fast_admission: 'off' },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

const lags = () => buildServices(t.runtime.config, t.runtime.clients).lags.all();

async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Receives and acks everything of a queue until `count` arrived, acking as a worker would. */
async function drain(queue: string, count: number): Promise<Received[]> {
  const api = queueApi(t, queue);
  const got: Received[] = [];
  const deadline = Date.now() + 30_000;
  while (got.length < count && Date.now() < deadline) {
    const batch = await api.receive({ max_messages: 10, wait_seconds: 1 });
    got.push(...batch);
    if (batch.length) await api.ack(batch.map((m) => m.receipt));
  }
  return got;
}

describe('queues sharing a stream', () => {
  it('admit on one shard: a full window lags its own queue, not the others, and is caught up', async () => {
    const full = await queueApi(t, 'full').produce(
      Array.from({ length: 30 }, (_, i) => ({ payload: { i } })),
    );
    // Produced after full's thirty: on a stream of its own they would wait behind them.
    const free = await queueApi(t, 'free').produce(Array.from({ length: 5 }, (_, i) => ({ payload: { i } })));
    expect([...full, ...free].every((r) => r.status === 'accepted')).toBe(true);

    const freeGot = await queueApi(t, 'free').receiveAll(5, 20_000);
    expect(freeGot.map((m) => m.message_id).sort()).toEqual(free.map((r) => r.message_id).sort());
    // Nobody received full's: its window of five is full, and dispatch noted how far it passed over.
    await until('full to lag', lags, (all) => all.some((l) => l.queue === 'full'));
    expect((await lags()).map((l) => l.queue)).not.toContain('free');

    const fullGot = await drain('full', 30);
    const ids = fullGot.map((m) => m.message_id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.sort()).toEqual(full.map((r) => r.message_id).sort());
    // Nothing of another queue was delivered on this one.
    expect(fullGot.every((m) => typeof m.payload.i === 'number' && m.payload.i < 30)).toBe(true);
    await until('the lag to end', lags, (all) => !all.some((l) => l.queue === 'full'));
  });

  it('reads nothing of the stream for a lagging queue while its window is full', async () => {
    const sent = await queueApi(t, 'stuck').produce(
      Array.from({ length: 20 }, (_, i) => ({ payload: { i } })),
    );
    expect(sent.every((r) => r.status === 'accepted')).toBe(true);
    await until('stuck to lag', lags, (all) => all.some((l) => l.queue === 'stuck'));
    const services = buildServices(t.runtime.config, t.runtime.clients);
    let reads = 0;
    // The real reader, counted: a full window's catch-up must not spend the shard's reads.
    const reader = new (class extends ShardReader {
      override pages(...args: Parameters<ShardReader['pages']>) {
        reads++;
        return super.pages(...args);
      }
    })(t.runtime.clients.kinesis);
    const catchUp = new LagCatchUp({ ...services, tenant: t.runtime.config.tenant, reader });
    await catchUp.run();
    expect(reads).toBe(0);
    expect((await lags()).map((l) => l.queue)).toContain('stuck');
    // Once its consumer makes room, the sweep's catch-up reads and admits.
    expect(await drain('stuck', 20)).toHaveLength(20);
    await until('the lag to end', lags, (all) => !all.some((l) => l.queue === 'stuck'));
  });

  it('keeps an ordered queue’s keys in order through a lag', async () => {
    const keys = ['a', 'b', 'c'];
    const sent = Array.from({ length: 24 }, (_, i) => ({ key: keys[i % 3], payload: { i } }));
    const results = await queueApi(t, 'sorted').produce(sent);
    expect(results.every((r) => r.status === 'accepted')).toBe(true);
    await queueApi(t, 'free').produce([{ payload: { after: true } }]);
    // The quiet queue's message behind them is delivered while sorted lags.
    expect(await queueApi(t, 'free').receiveAll(1, 20_000)).toHaveLength(1);

    const got = await drain('sorted', 24);
    expect(got).toHaveLength(24);
    for (const key of keys) {
      const order = got.filter((m) => m.key === key).map((m) => m.payload.i);
      expect(order).toEqual([...order].sort((a, b) => a - b));
      expect(order).toHaveLength(8);
    }
    await until('the lag to end', lags, (all) => !all.some((l) => l.queue === 'sorted'));
  });

  it('counts, replays and traces only its own queue’s records', async () => {
    const free = queueApi(t, 'free');
    // free had six produced in this file; full's thirty and sorted's twenty-four are not its.
    expect((await free.stats()).produced_total).toBe(6);
    const res = await t.api('/queues/free/replay', {
      body: { from: new Date(started).toISOString(), rate_per_sec: 1000 },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const job = await until(
      'the replay',
      async () => (await t.api(`/queues/free/replays/${res.body.replay_id}`)).body,
      (j) => j.status !== 'running',
    );
    expect(job, JSON.stringify(job)).toMatchObject({ status: 'done', replayed: 6 });
    const again = await drain('free', 6);
    expect(again).toHaveLength(6);
    expect(again.every((m) => m.replay_id === res.body.replay_id)).toBe(true);
    const trace = await t.api(`/queues/free/messages/${again[0]?.message_id}`);
    expect(trace.status, JSON.stringify(trace.body)).toBe(200);
    // Another queue's message is not found on this one, though its record is on the same shard.
    const other = (await queueApi(t, 'full').produce([{ payload: { i: 99 } }]))[0]?.message_id;
    expect((await t.api(`/queues/free/messages/${other}`)).status).toBe(404);
  });

  // Last: it stops the runtime's sweep, so its own catch-ups are the only ones.
  it('reads the shard for a lagging queue in pages sized to its room, not a thousand records for a few', async () => {
    const sent = await queueApi(t, 'narrow').produce(
      Array.from({ length: 20 }, (_, i) => ({ payload: { i } })),
    );
    expect(sent.every((r) => r.status === 'accepted')).toBe(true);
    await until('narrow to lag', lags, (all) => all.some((l) => l.queue === 'narrow'));
    t.runtime.sweep.stop();
    const limits: number[] = [];
    const reader = new (class extends ShardReader {
      override pages(...args: Parameters<ShardReader['pages']>) {
        limits.push(args[3]);
        return super.pages(...args);
      }
    })(t.runtime.clients.kinesis);
    const services = buildServices(t.runtime.config, t.runtime.clients);
    const catchUp = new LagCatchUp({ ...services, tenant: t.runtime.config.tenant, reader });
    const api = queueApi(t, 'narrow');
    const got: Received[] = [];
    const deadline = Date.now() + 30_000;
    while (got.length < 20 && Date.now() < deadline) {
      const batch = await api.receive({ max_messages: 10, wait_seconds: 0 });
      got.push(...batch);
      if (batch.length) await api.ack(batch.map((m) => m.receipt));
      await catchUp.run();
    }
    expect(got.map((m) => m.message_id).sort()).toEqual(sent.map((r) => r.message_id).sort());
    // A window of five has room for five at most: each read is the smallest page, never PAGE's thousand.
    expect(limits.length).toBeGreaterThan(0);
    expect(limits.every((limit) => limit === 100)).toBe(true);
  });
});
