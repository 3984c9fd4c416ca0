import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../functions/core/async.js';
import { buildServices } from '../../functions/services.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * Poison on an ordered shard: per shard, the oldest unacked age and how long the
 * commit point has not moved, so one stuck shard shows however healthy the others are; a backlog
 * that moves is not a stall.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({ tenant: 'stall', queues: { ledger: { shards: 2, ordered: true } } });
});
afterAll(async () => {
  await t?.close();
});

describe('a stuck ordered shard', () => {
  it('shows in its own shard: stalled while its head is held, not while its backlog moves', async () => {
    const q = queueApi(t, 'ledger');
    const config = t.runtime.config.tenant.queues.ledger;
    if (!config) throw new Error('queue missing');
    const sweep = buildServices(t.runtime.config, t.runtime.clients).stats;
    // Two keys: find two that land on different shards.
    await q.produce(
      Array.from({ length: 8 }, (_, i) => ({ message_id: `m-${i}`, key: `k-${i}`, payload: i })),
    );
    const got = await q.receiveAll(8, 10_000);
    expect(got).toHaveLength(8);
    const shardOf = new Map<string, string>();
    for (const r of await t.records('ledger')) shardOf.set(r.envelope.message_id, r.shardId);
    const stuck = got[0] as (typeof got)[number];
    const stuckShard = shardOf.get(stuck.message_id) as string;
    const flowing = got.filter((m) => shardOf.get(m.message_id) !== stuckShard);
    expect(flowing.length).toBeGreaterThan(0);
    const flowingShard = shardOf.get(flowing[0]?.message_id as string) as string;
    // The poison head stays leased; everything else is handled.
    await q.ack(got.filter((m) => m !== stuck).map((m) => m.receipt));

    expect((await sweep.queue('ledger', config, { keepMarks: true })).commit_stalled_seconds).toBe(0);
    await sleep(2100);
    const stats = await q.stats();
    expect(stats.commit_stalled_seconds_by_shard[stuckShard]).toBeGreaterThanOrEqual(2);
    expect(stats.commit_stalled_seconds_by_shard[flowingShard]).toBe(0);
    expect(stats.commit_stalled_seconds).toBe(stats.commit_stalled_seconds_by_shard[stuckShard]);
    expect(stats.oldest_unacked_age_seconds_by_shard[stuckShard]).toBeGreaterThanOrEqual(2);
    expect(stats.oldest_unacked_age_seconds_by_shard[flowingShard]).toBe(0);
    expect(stats.oldest_unacked_age_seconds).toBe(stats.oldest_unacked_age_seconds_by_shard[stuckShard]);

    // Handled at last: the shard moves on, and a later backlog that drains is not a stall.
    await q.ack([stuck.receipt]);
    await q.produce([
      { message_id: 'b-1', key: 'later', payload: 1 },
      { message_id: 'b-2', key: 'later', payload: 2 },
    ]);
    const first = await q.receiveAll(1, 10_000);
    await sweep.queue('ledger', config, { keepMarks: true });
    await sleep(1100);
    await q.ack(first.map((m) => m.receipt));
    const second = await q.receiveAll(1, 10_000);
    expect(second.map((m) => m.message_id)).toEqual(['b-2']);
    const after = await q.stats();
    expect(after.commit_stalled_seconds).toBe(0);
    await q.ack(second.map((m) => m.receipt));
  }, 40_000);
});
