import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownStreamName } from '../../functions/core/config.js';
import { createAdminClients } from '../../infra/local/admin-clients.js';
import { reshardStream } from '../../infra/local/reshard.js';
import { calls } from '../fixtures/ordered-lambda-consumer.js';
import { queueApi, type Received } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { until } from '../helpers/until.js';

/**
 * A stream resharded under a running queue: the lease layer follows the lineage, an ordered
 * queue's key never goes out of order across a split or a merge (its messages in a child wait
 * for what it has unfinished in a parent, other keys flow), nothing is lost, and a trace follows
 * a message into the children.
 */

let t: TestRuntime;
const TENANT = 'reshard';

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: TENANT,
    queues: {
      ord: { ordered: true, shards: 1, lease_seconds: 60, backoff_seconds: [0], max_attempts: 20 },
      plain: { shards: 1, lease_seconds: 60 },
      traced: { shards: 1, lease_seconds: 60, backoff_seconds: [1] },
      parks: { ordered: true, shards: 1, lease_seconds: 60, backoff_seconds: [0], max_attempts: 3 },
      ledger: {
        ordered: true,
        shards: 1,
        consumers: [{ name: 'books', entry: 'test/fixtures/ordered-lambda-consumer.ts' }],
      },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

async function reshard(queue: string, shards: number): Promise<void> {
  const admin = createAdminClients(t.runtime.endpoints);
  try {
    await reshardStream(admin.kinesis, ownStreamName(TENANT, queue), shards);
  } finally {
    admin.destroy();
  }
}

type Shard = { id: string; state: string; parents: string[] };

/** The queue's shards as stats show them once none is draining. */
async function drained(q: ReturnType<typeof queueApi>): Promise<Shard[]> {
  let shards: Shard[] = [];
  await until(async () => {
    shards = (await q.stats()).shards;
    return shards.every((s) => s.state !== 'draining');
  }, 30_000);
  return shards;
}

function batch(prefix: string, keys: number, perKey: number, from = 0) {
  const messages = [];
  for (let seq = from; seq < from + perKey; seq++)
    for (let k = 0; k < keys; k++)
      messages.push({ message_id: `${prefix}-${k}-${seq}`, key: `k${k}`, payload: { k, seq } });
  return messages;
}

describe('an ordered queue resharded under load', () => {
  it('holds a key in a child while its message in the parent is leased, lets other keys flow, and keeps every key in order through split and merges', async () => {
    const q = queueApi(t, 'ord');
    const KEYS = 12;
    // A consumer holds key k0's first message across the reshard.
    expect((await q.produce(batch('o', 1, 1))).every((r) => r.status === 'accepted')).toBe(true);
    const [held] = await q.receiveAll(1, 10_000, { max_messages: 1 });
    expect(held?.message_id).toBe('o-0-0');
    // Before the reshard: the other keys' first messages and every key's second, on the only shard.
    const before = batch('o', KEYS, 2).filter((m) => m.message_id !== 'o-0-0');
    expect((await q.produce(before)).every((r) => r.status === 'accepted')).toBe(true);

    await reshard('ord', 2);
    // After it: three more of each key, on the children.
    expect((await q.produce(batch('o', KEYS, 3, 2))).every((r) => r.status === 'accepted')).toBe(true);

    // Everything but k0 flows to its end, in order; k0's later messages (one in the parent, three
    // in a child) wait for its held first.
    const next = new Map<string, number>([...Array(KEYS).keys()].map((k) => [`k${k}`, 0]));
    next.set('k0', 1);
    const outOfOrder: string[] = [];
    const take = async (got: Received[]) => {
      for (const m of got) {
        const key = m.key as string;
        if (m.payload.seq !== next.get(key))
          outOfOrder.push(`${key}: got ${m.payload.seq}, next ${next.get(key)}`);
        next.set(key, m.payload.seq + 1);
      }
      if (got.length) await q.ack(got.map((m) => m.receipt));
    };
    await until(async () => {
      const got = await q.receive({ max_messages: 10, wait_seconds: 1 });
      expect(got.filter((m) => m.key === 'k0')).toEqual([]);
      await take(got);
      return [...next].every(([key, seq]) => key === 'k0' || seq === 5);
    }, 60_000);
    expect(outOfOrder).toEqual([]);

    // Split again and merge down (4 → 3 merges, then splits to even ranges: a chain of lineage)
    // while k0 is still held, with more of every key produced between the changes.
    await reshard('ord', 4);
    expect((await q.produce(batch('o', KEYS, 2, 5))).every((r) => r.status === 'accepted')).toBe(true);
    await reshard('ord', 3);
    expect((await q.produce(batch('o', KEYS, 2, 7))).every((r) => r.status === 'accepted')).toBe(true);
    expect(await q.receive({ max_messages: 10, wait_seconds: 0 }).then((got) => take(got))).toBeUndefined();

    // Now k0's first is acked: every key drains to its end, in order.
    await q.ack([held?.receipt as string]);
    await until(async () => {
      await take(await q.receive({ max_messages: 10, wait_seconds: 1 }));
      return [...next.values()].every((seq) => seq === 9);
    }, 90_000);
    expect(outOfOrder).toEqual([]);
    expect(await q.receive({ max_messages: 10, wait_seconds: 0 })).toEqual([]);

    // Stats show the lineage: three open shards, and every closed one finished once the sweep
    // has seen it empty; each shard names its parents, the first shard none.
    const shards = await drained(q);
    expect(shards.filter((s) => s.state === 'open')).toHaveLength(3);
    expect(shards.find((s) => s.id === 'shardId-000000000000')).toEqual({
      id: 'shardId-000000000000',
      state: 'finished',
      parents: [],
    });
    const ids = new Set(shards.map((s) => s.id));
    for (const s of shards.slice(1)) {
      expect(s.parents.length).toBeGreaterThan(0);
      for (const p of s.parents) expect(ids.has(p)).toBe(true);
    }
  }, 240_000);
});

describe('an unordered queue resharded under load', () => {
  it('reads children at once and loses nothing', async () => {
    const q = queueApi(t, 'plain');
    const ids = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({ message_id: `p-${from + i}`, payload: { i: from + i } }));
    expect((await q.produce(ids(0, 30))).every((r) => r.status === 'accepted')).toBe(true);
    // A lease held across the reshard: the children flow meanwhile.
    const first = await q.receiveAll(1, 10_000, { max_messages: 1 });
    await reshard('plain', 2);
    expect((await q.produce(ids(30, 30))).every((r) => r.status === 'accepted')).toBe(true);
    const rest = await q.receiveAll(59, 30_000);
    await q.ack(rest.map((m) => m.receipt));
    await q.ack(first.map((m) => m.receipt));
    const seen = [...first, ...rest].map((m) => m.message_id).sort();
    expect(seen).toEqual(Array.from({ length: 60 }, (_, i) => `p-${i}`).sort());
  });
});

describe('a message retried across a reshard', () => {
  it('is traced to its retry in the child shard', async () => {
    const q = queueApi(t, 'traced');
    expect((await q.produce([{ message_id: 't-1', payload: {} }]))[0]?.status).toBe('accepted');
    const [first] = await q.receiveAll(1, 10_000);
    expect(first?.message_id).toBe('t-1');
    const before = await t.api('/queues/traced/messages/t-1');
    expect(before.body.state).toBe('leased');

    await reshard('traced', 2);
    // Its retry goes back through the log after the reshard: onto a child.
    expect((await q.nack({ receipt: first?.receipt, error: 'again' })).status).toBe(200);
    const [retry] = await q.receiveAll(1, 30_000);
    expect(retry).toMatchObject({ message_id: 't-1', attempt: 2 });

    const trace = await t.api('/queues/traced/messages/t-1');
    expect(trace.status).toBe(200);
    expect(trace.body.state).toBe('leased');
    expect(trace.body.shard).not.toBe(before.body.shard);
    const enqueued = trace.body.events.filter((e: { event: string }) => e.event === 'enqueued');
    expect(enqueued.at(-1)?.detail).toMatchObject({ entry: 2, shard: trace.body.shard });
    await q.ack([retry?.receipt as string]);
    expect((await t.api('/queues/traced/messages/t-1')).body.state).toBe('acked');
  }, 120_000);
});

describe('a key parked in a parent shard', () => {
  it('has its messages in a child moved to its hold area, so its redriven dead letter behind them goes first, then the rest in order', async () => {
    const q = queueApi(t, 'parks');
    // Two of its later messages wait in the parent, and move to its hold area from there.
    await q.produce([0, 1, 2].map((i) => ({ message_id: `a-${i}`, key: 'acct', payload: i })));
    const [first] = await q.receiveAll(1, 10_000);
    expect(first?.message_id).toBe('a-0');
    expect((await q.nack({ receipt: first?.receipt, retryable: false, error: 'bad' })).body.status).toBe(
      'dead_lettered',
    );
    await reshard('parks', 2);
    // More of the key than a look reads ranges of, each its own range in a child: were they left
    // waiting there, the redriven dead letter admitted behind them would never be read.
    const N = 70;
    for (let i = 3; i <= N; i++) {
      expect((await q.produce([{ message_id: `a-${i}`, key: 'acct', payload: i }]))[0]?.status).toBe(
        'accepted',
      );
      await t.runtime.eventSource.drained(10_000);
    }
    const parked = async () => (await t.api('/queues/parks/keys/parked')).body.keys;
    await until(async () => {
      await t.runtime.sweep.fire();
      return (await parked())[0]?.held === N;
    }, 60_000);
    expect(
      (
        await t.api('/queues/parks/redrive', {
          body: { rate_per_sec: 100, filter: { message_ids: ['a-0'] } },
        })
      ).status,
    ).toBe(202);
    const order: number[] = [];
    await until(async () => {
      const got = await q.receive({ max_messages: 10, wait_seconds: 1 });
      expect(got.length).toBeLessThanOrEqual(1);
      order.push(...got.map((m) => m.payload as number));
      if (got.length) await q.ack(got.map((m) => m.receipt));
      return order.length === N + 1;
      // One at a time, each a receive and an ack: 0.2-0.4 s each here.
    }, 180_000);
    expect(order).toEqual(Array.from({ length: N + 1 }, (_, i) => i));
  }, 360_000);
});

describe('a queue with a Lambda consumer resharded', () => {
  it("shows the parent finished once the consumer has handled all of it, each key's messages in order", async () => {
    const q = queueApi(t, 'ledger');
    const some = (from: number) =>
      Array.from({ length: 20 }, (_, i) => ({ key: `k${i % 4}`, payload: { n: from + i } }));
    expect((await q.produce(some(0))).every((r) => r.status === 'accepted')).toBe(true);
    await reshard('ledger', 2);
    expect((await q.produce(some(20))).every((r) => r.status === 'accepted')).toBe(true);
    await until(async () => calls.filter((c) => c.ok).length === 40, 60_000);
    for (const key of ['k0', 'k1', 'k2', 'k3']) {
      const ns = calls.filter((c) => c.key === key && c.ok).map((c) => c.n);
      expect(ns).toEqual([...ns].sort((a, b) => a - b));
    }
    const shards = await drained(q);
    expect(shards.map((s) => s.state).sort()).toEqual(['finished', 'open', 'open']);
    // Nothing is left to sweep: no closed shard keeps the sweep awake (it rests once its last arm
    // is 40 s old: core/sweep-rest.ts).
    await until(() => t.runtime.sweep.resting, 90_000);
  }, 180_000);
});
