import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeySequencer, type KeyViews } from '../../functions/admission/key-sequencer.js';
import type { Envelope } from '../../functions/core/envelope.js';
import { buildServices, type Services } from '../../functions/services.js';
import { countedRanges } from '../helpers/counted-ranges.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/** An ordered queue's key decisions against the real store: what a plan reads, and what its write refuses. */
describe('KeySequencer', () => {
  let t: TestRuntime;
  let services: Services;
  let sequencer: KeySequencer;
  const Q = 'seq';
  const SHARD = 'shardId-000000000000';
  const env = (id: string, key: string): Envelope => ({
    v: 1,
    message_id: id,
    queue: Q,
    produced_at: new Date().toISOString(),
    enqueued_at: new Date().toISOString(),
    attempt: 1,
    entry: 1,
    key,
    payload: 'p',
  });
  /** A key whose head `h-<key>` was admitted at `sequence` 100, place 0. */
  const keyWithHead = async (key: string) => {
    const head = { message_id: `h-${key}`, sequence: '100', position: 0 };
    expect(await services.keys.sequence(Q, key, { sequenced: '100', head, unpark: false })).toBe(true);
    return (await services.keys.getMany(Q, [key])).get(key);
  };

  beforeAll(async () => {
    t = await startTestRuntime({ tenant: 'sequencer', queues: { [Q]: { shards: 1, ordered: true } } });
    services = buildServices(t.runtime.config, t.runtime.clients);
    sequencer = new KeySequencer(services);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('decides a key from what was read early, and reads the keys that were not', async () => {
    const early = await keyWithHead('early');
    const late = await keyWithHead('late');
    expect(await services.keys.park(Q, 'late', 'h-late', SHARD, Date.now())).toBe(true);
    // Read early: its head acked (the store has no range of it, so a read now says in flight).
    const views: KeyViews = new Map([['early', { state: early, status: 'acked' }]]);
    const plan = await sequencer.plan(
      Q,
      SHARD,
      [
        { sequence: '200', envelope: env('m-1', 'early'), due: true },
        { sequence: '201', envelope: env('m-2', 'late'), due: true },
      ],
      views,
    );
    // Open as read early: the head. Parked in the store, read now: held.
    expect(plan.steps).toEqual(['head', 'hold']);
    expect(late?.parked_at).toBeUndefined();
    expect(plan.keys.get('late')?.state?.parked_at).toBeDefined();
  });

  it('takes a head below the commit point as finished without reading its range, unless it holds its key', async () => {
    const ranges = countedRanges(t.runtime.clients.doc, t.runtime.config.tableName);
    const counted = new KeySequencer({ ...services, ranges: ranges.store });
    const shard = 'shardId-000000000009';
    await keyWithHead('old');
    await keyWithHead('held-by-head');
    expect(await services.keys.claim(Q, 'held-by-head', 'h-held-by-head')).toBe(true);
    // Before the commit point moves past the heads (sequence 100), each head's range is read.
    expect((await counted.views(Q, shard, ['old'])).get('old')?.status).toBeUndefined();
    expect(ranges.calls('entryAt')).toBe(1);
    await services.ranges.advanceCommitHint(Q, shard, '200');
    ranges.reset();
    const views = await counted.views(Q, shard, ['old', 'held-by-head']);
    expect(views.get('old')?.status).toBe('finished');
    // Its head holds it: whether that head was acked (which releases the key) takes its range.
    expect(ranges.calls('entryAt')).toBe(1);
    const plan = await counted.plan(
      Q,
      shard,
      [{ sequence: '300', envelope: env('m-4', 'old'), due: true }],
      views,
    );
    expect(plan.steps).toEqual(['head']);
  });

  it('refuses to open a key its failing head took between the read of the key and of its status', async () => {
    const state = await keyWithHead('raced');
    // The head fails now: the key is marked first, then its range (the status read sees that).
    expect(await services.keys.claim(Q, 'raced', 'h-raced')).toBe(true);
    const views: KeyViews = new Map([['raced', { state, status: 'failed' }]]);
    const plan = await sequencer.plan(
      Q,
      SHARD,
      [{ sequence: '300', envelope: env('m-3', 'raced'), due: true }],
      views,
    );
    expect(plan.steps).toEqual(['head']);
    await expect(sequencer.apply(Q, SHARD, plan, new Map([['300', 1]]), 3600)).rejects.toThrow(
      /changed while its records were sequenced/,
    );
    const after = (await services.keys.getMany(Q, ['raced'])).get('raced');
    expect(after?.busy_with).toBe('h-raced');
    expect(after?.head?.message_id).toBe('h-raced');
  });
});
