import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsClients, createClients } from '../../functions/aws/clients.js';
import type { Envelope } from '../../functions/core/envelope.js';
import { entryStatus, passOnMark, RANGE_ENTRIES, type Range } from '../../functions/core/ranges.js';
import { KeyHolds } from '../../functions/store/key-holds.js';
import { KeyStates } from '../../functions/store/key-states.js';
import { RangeStore } from '../../functions/store/ranges.js';
import { SEGMENT_ITEM_MAX_BYTES, SegmentStore } from '../../functions/store/segments.js';
import { aRange } from '../helpers/ranges.js';
import { DYNAMODB, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The store conformance suite of the lease layer: RangeStore and SegmentStore driven directly,
 * on the emulator this run uses (dynalite under `npm test`, AWS's DynamoDB Local under
 * `npm run test:dynamodb-local`), so the conditional writes the layer rests on are checked where
 * they run.
 */

describe.each([DYNAMODB])('the lease layer store on %s', () => {
  let t: TestRuntime;
  let clients: AwsClients;
  let ranges: RangeStore;
  let segments: SegmentStore;
  const Q = 'conf';
  const SHARD = 'shardId-000000000000';
  let next = 1000;
  /** A range of `count` entries, far from every other test's, not yet written. */
  const rangeAhead = (count = 5) => {
    next += 1000;
    const start = String(next);
    return {
      shard: SHARD,
      start,
      last: String(next + count - 1),
      count,
      base: next,
      enqueuedAt: 1,
      segment: { id: start, offset: 0, store: 'ddb' as const },
    };
  };
  /** A fresh range of `count` entries, written. */
  const newRange = async (count = 5) => {
    const r = rangeAhead(count);
    expect(await ranges.create(Q, r, 0)).toBeDefined();
    return r;
  };
  const env = (n: number, bytes: number): Envelope => ({
    v: 1,
    message_id: `m-${n}`,
    queue: Q,
    produced_at: new Date().toISOString(),
    enqueued_at: new Date().toISOString(),
    attempt: 1,
    entry: 1,
    payload: 'p'.repeat(bytes),
  });
  const lease = (expiresAt: number, consumerId = 'worker-1') => ({
    expiresAt,
    deliveredAt: expiresAt - 1,
    consumerId,
  });

  beforeAll(async () => {
    t = await startTestRuntime({ tenant: 'conformance', queues: { conf: { shards: 1 } } });
    clients = createClients({ region: 'us-east-1', endpoints: t.runtime.endpoints, maxAttempts: 1 });
    ranges = new RangeStore(clients.doc, t.runtime.config.tableName);
    segments = new SegmentStore(
      clients.doc,
      clients.s3,
      t.runtime.config.tableName,
      t.runtime.config.bucketName,
    );
  }, 120_000);
  afterAll(async () => {
    clients?.destroy();
    await t?.close();
  });

  it('writes a range once, and finds it by any of its positions', async () => {
    const r = await newRange(3);
    expect(await ranges.create(Q, r, 0)).toBeUndefined();
    expect((await ranges.containing(Q, SHARD, String(Number(r.start) + 2)))?.start).toBe(r.start);
    expect(await ranges.containing(Q, SHARD, String(Number(r.start) + 3))).toBeUndefined();
    // An entry found by its place in the admission order, not by the range an admitter meant.
    const at = await ranges.entryAt(Q, SHARD, {
      sequence: String(Number(r.start) + 2),
      position: r.base + 2,
    });
    expect([at?.range.start, at?.index]).toEqual([r.start, 2]);
    expect(
      await ranges.entryAt(Q, SHARD, { sequence: String(Number(r.last) + 1), position: r.base + 3 }),
    ).toBeUndefined();
    expect((await ranges.head(Q, SHARD))?.start).toBe(r.start);
    const from = await ranges.from(Q, SHARD, r.start, 10, true);
    expect(from.map((x) => x.start)).toEqual([r.start]);
  });

  it('leases entries all or none, each once, and disjoint leases of one range both land', async () => {
    const r = await newRange(6);
    const now = Date.now();
    expect(await ranges.lease(Q, await got(r.start), [0, 1], lease(now + 60_000))).toBeDefined();
    expect(await ranges.lease(Q, await got(r.start), [1, 2], lease(now + 60_000))).toBeUndefined();
    const racers = await Promise.all(
      [[2], [3], [4], [5]].map((i) => ranges.lease(Q, asAdmitted(r), i, lease(now + 60_000))),
    );
    expect(racers.every((x) => x !== undefined)).toBe(true);
    const same = await Promise.all(
      Array.from({ length: 8 }, (_, k) => ranges.lease(Q, asAdmitted(r), [0], lease(now + 1, `w${k}`))),
    );
    expect(same.filter((x) => x !== undefined)).toHaveLength(0);
    const read = await got(r.start);
    expect([...read.leases.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(read.leases.get(0)?.consumerId).toBe('worker-1');
  });

  it('acks only live, unfinished leases; a repeated ack fails; the ack time is kept', async () => {
    const r = await newRange(4);
    const now = Date.now();
    await ranges.lease(Q, await got(r.start), [0, 1], lease(now + 60_000));
    await ranges.lease(Q, await got(r.start), [2], lease(now - 1));
    const acked = await ranges.ack(Q, r, [0, 1], now);
    expect([...(acked?.acked ?? [])].sort()).toEqual([0, 1]);
    expect(acked?.ackedAt).toBe(now);
    expect(await ranges.ack(Q, r, [0], now)).toBeUndefined();
    expect(await ranges.ack(Q, r, [2], now)).toBeUndefined();
    expect(await ranges.ack(Q, r, [3], now)).toBeUndefined();
  });

  it('fails a lease by its expiry; a failed entry cannot be acked, extended or failed again', async () => {
    const r = await newRange(3);
    const now = Date.now();
    await ranges.lease(Q, await got(r.start), [0], lease(now + 60_000));
    await ranges.lease(Q, await got(r.start), [1], lease(now - 1));
    expect(await ranges.fail(Q, r, 0, 'expired', now)).toBeUndefined();
    expect(await ranges.fail(Q, r, 1, 'live', now)).toBeUndefined();
    expect(await ranges.fail(Q, r, 1, 'expired', now)).toBeDefined();
    expect(await ranges.fail(Q, r, 1, 'any', now)).toBeUndefined();
    expect(await ranges.fail(Q, r, 0, 'live', now)).toBeDefined();
    expect(await ranges.ack(Q, r, [0], now)).toBeUndefined();
    expect(await ranges.extend(Q, r, 0, now + 90_000, now)).toBeUndefined();
    expect(await ranges.fail(Q, r, 2, 'any', now)).toBeUndefined();
    const read = await got(r.start);
    expect([...read.failed].sort()).toEqual([0, 1]);
  });

  it('extends a live lease only', async () => {
    const r = await newRange(2);
    const now = Date.now();
    await ranges.lease(Q, await got(r.start), [0], lease(now + 1000));
    await ranges.lease(Q, await got(r.start), [1], lease(now - 1));
    expect((await ranges.extend(Q, r, 0, now + 90_000, now))?.leases.get(0)?.expiresAt).toBe(now + 90_000);
    expect(await ranges.extend(Q, r, 1, now + 90_000, now)).toBeUndefined();
  });

  it('moves the commit hint forward only', async () => {
    await ranges.advanceCommitHint(Q, 'shardId-000000000009', '200');
    await ranges.advanceCommitHint(Q, 'shardId-000000000009', '1000');
    await ranges.advanceCommitHint(Q, 'shardId-000000000009', '999');
    expect(await ranges.commitHint(Q, 'shardId-000000000009')).toBe('1000');
  });

  it('keeps a range with every entry leased by long consumer ids, acked and failed, at one write unit', async () => {
    const r = await newRange(RANGE_ENTRIES);
    const now = Date.now();
    clients.meter.reset();
    for (let i = 0; i < RANGE_ENTRIES; i += 2) {
      const consumer = `consumer-with-a-long-name-${i % 6}-${'x'.repeat(30)}`;
      await ranges.lease(Q, await got(r.start), [i, i + 1], lease(now + 3_600_000 + i, consumer));
    }
    await ranges.ack(Q, r, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], now);
    for (const i of [10, 11, 12]) await ranges.fail(Q, r, i, 'live', now);
    await ranges.ack(Q, r, [13, 14, 15, 16, 17, 18, 19], now);
    const writes = clients.meter.snapshot();
    const writeCalls = (writes.requests['DynamoDB.UpdateItem'] ?? 0) as number;
    expect(writeCalls).toBe(RANGE_ENTRIES / 2 + 5);
    expect(writes.writeUnits).toBe(writeCalls);
  });

  it('leases what is still free of a pick, and fails only when nothing of it is', async () => {
    const r = await newRange(8);
    const now = Date.now();
    const first = await ranges.leaseFree(Q, r, [0, 1], lease(now + 60_000, 'w1'));
    expect(first?.won).toEqual([0, 1]);
    // Overlapping: only what w1 did not take, and w1's leases stay as they were.
    const second = await ranges.leaseFree(Q, r, [1, 2, 3], lease(now + 70_000, 'w2'));
    expect(second?.won).toEqual([2, 3]);
    expect(second?.range.leases.get(1)).toMatchObject({ consumerId: 'w1', expiresAt: now + 60_000 });
    expect(second?.range.leases.get(3)).toMatchObject({ consumerId: 'w2', expiresAt: now + 70_000 });
    expect(await ranges.leaseFree(Q, r, [0, 1, 2], lease(now + 60_000, 'w3'))).toBeUndefined();
    // Acked and expired entries keep their lease: not free again.
    await ranges.leaseFree(Q, r, [4, 5], lease(now - 1));
    expect(await ranges.ack(Q, r, [3], now)).toBeDefined();
    expect(await ranges.leaseFree(Q, r, [3, 4, 5], lease(now + 60_000, 'w4'))).toBeUndefined();
    // An entry waiting for its retry fails the whole write; given back, an entry is free again.
    await ranges.retry(Q, r, 2, now + 70_000 - 1, now + 5000, now);
    expect(await ranges.leaseFree(Q, r, [2, 6], lease(now + 60_000, 'w5'))).toBeUndefined();
    expect(await ranges.release(Q, r, [0], lease(now + 60_000, 'w1'))).toBeDefined();
    expect((await ranges.leaseFree(Q, r, [0, 6], lease(now + 60_000, 'w5')))?.won).toEqual([0, 6]);
    const read = await got(r.start);
    expect([...read.leases].map(([i, l]) => [i, l.consumerId])).toEqual(
      expect.arrayContaining([
        [0, 'w5'],
        [1, 'w1'],
        [3, 'w2'],
        [6, 'w5'],
      ]),
    );
  });

  it('gives each entry to one of many receivers leasing overlapping picks at once', async () => {
    const r = await newRange(RANGE_ENTRIES);
    const now = Date.now();
    const picks = Array.from({ length: 8 }, (_, k) =>
      Array.from({ length: 10 }, (_, j) => (k * 3 + j) % RANGE_ENTRIES),
    );
    const results = await Promise.all(
      picks.map((pick, k) => ranges.leaseFree(Q, r, pick, lease(now + 60_000, `r${k}`))),
    );
    const won = results.flatMap((x, k) => (x?.won ?? []).map((index) => [index, `r${k}`] as const));
    // No entry twice, every picked entry to someone, and to the receiver its range says holds it.
    expect(new Set(won.map(([index]) => index)).size).toBe(won.length);
    expect(won).toHaveLength(new Set(picks.flat()).size);
    const read = await got(r.start);
    for (const [index, receiver] of won) expect(read.leases.get(index)?.consumerId).toBe(receiver);
  });

  it('lets a nacked entry wait in its range: no ack, extend, lease or second nack of it lands', async () => {
    const r = await newRange(3);
    const now = Date.now();
    const l = lease(now + 60_000);
    await ranges.lease(Q, await got(r.start), [0, 1], l);
    // Only the delivery that was made: another delivery time is another receipt.
    expect(await ranges.retry(Q, r, 0, l.deliveredAt + 1, now + 5000, now)).toBeUndefined();
    const waiting = await ranges.retry(Q, r, 0, l.deliveredAt, now + 5000, now);
    expect(waiting?.retrying.get(0)).toEqual({ dueAt: now + 5000 });
    expect(waiting?.leases.has(0)).toBe(false);
    expect(entryStatus(waiting as Range, 0, now)).toBe('retrying');
    expect(await ranges.retry(Q, r, 0, l.deliveredAt, now + 5000, now)).toBeUndefined();
    expect(await ranges.ack(Q, r, [0], now)).toBeUndefined();
    expect(await ranges.extend(Q, r, 0, now + 90_000, now)).toBeUndefined();
    expect(await ranges.fail(Q, r, 0, 'any', now)).toBeUndefined();
    expect(await ranges.lease(Q, { ...(waiting as Range), retrying: new Map() }, [0], l)).toBeUndefined();
    // An expired lease cannot wait: the sweep fails it through the delay store.
    await ranges.lease(Q, await got(r.start), [2], lease(now - 1));
    expect(await ranges.retry(Q, r, 2, now - 2, now + 5000, now)).toBeUndefined();
    // Its retry entry's admission finishes it, once; the same copy's admission offered again lands.
    expect(await ranges.passOn(Q, r, [{ index: 0, mark: 'p1.copyA' }])).toBeDefined();
    expect(await ranges.passOn(Q, r, [{ index: 0, mark: 'p1.copyA' }])).toBeDefined();
    expect(await ranges.passOn(Q, r, [{ index: 0, mark: 'p1.copyB' }])).toBeUndefined();
    const done = await got(r.start);
    expect(entryStatus(done, 0, now)).toBe('failed');
    expect(done.passedOn.get(0)).toBe('p1.copyA');
    expect(done.retrying.size).toBe(0);
    // A live lease was never waiting: nothing to pass on, and a batch with it passes none.
    expect(await ranges.passOn(Q, r, [{ index: 1, mark: 'p1.copyC' }])).toBeUndefined();
  });

  it('moves a waiting retry to the delay store once, and then no copy of its retry passes it on', async () => {
    const r = await newRange(2);
    const now = Date.now();
    const l = lease(now + 60_000);
    await ranges.lease(Q, await got(r.start), [0, 1], l);
    await ranges.retry(Q, r, 0, l.deliveredAt, now + 5000, now);
    await ranges.retry(Q, r, 1, l.deliveredAt, now + 5000, now);
    expect(await ranges.moveRetry(Q, r, 0)).toBeDefined();
    expect(await ranges.moveRetry(Q, r, 0)).toBeUndefined();
    expect(await ranges.passOn(Q, r, [{ index: 0, mark: 'p1.copyA' }])).toBeUndefined();
    expect(await ranges.passOn(Q, r, [{ index: 1, mark: 'p1.copyB' }])).toBeDefined();
    expect(await ranges.moveRetry(Q, r, 1)).toBeUndefined();
    const read = await got(r.start);
    expect([...read.failed].sort()).toEqual([0, 1]);
    expect([...read.passedOn]).toEqual([[1, 'p1.copyB']]);
  });

  it('keeps a range with every entry leased by long consumer ids, nacked and passed on, at one write unit', async () => {
    const r = await newRange(RANGE_ENTRIES);
    const now = Date.now();
    const leases = [];
    for (let i = 0; i < RANGE_ENTRIES; i += 2) {
      const consumer = `consumer-with-a-long-name-${i % 6}-${'x'.repeat(30)}`;
      const l = lease(now + 3_600_000 + i, consumer);
      leases.push(l, l);
      await ranges.lease(Q, await got(r.start), [i, i + 1], l);
    }
    clients.meter.reset();
    for (let i = 0; i < RANGE_ENTRIES; i++)
      await ranges.retry(Q, r, i, leases[i]?.deliveredAt as number, now + 3_600_000, now);
    const marks = Array.from({ length: RANGE_ENTRIES }, (_, index) => ({
      index,
      mark: passOnMark(now + 3_600_000, `4960${'8'.repeat(52)}${index}`),
    }));
    await ranges.passOn(Q, r, marks.slice(0, 10));
    await ranges.passOn(Q, r, marks.slice(10));
    const writes = clients.meter.snapshot();
    expect(writes.requests['DynamoDB.UpdateItem']).toBe(RANGE_ENTRIES + 2);
    expect(writes.writeUnits).toBe(RANGE_ENTRIES + 2);
  });

  it('keeps segments immutable and readable at once, small ones as items and large ones in S3', async () => {
    const small = [{ sequence: '77', envelope: env(1, 100) }];
    const large = Array.from({ length: 10 }, (_, i) => ({
      sequence: String(80 + i),
      envelope: env(i, 1024),
    }));
    const a = await segments.put(Q, SHARD, small, 0);
    const b = await segments.put(Q, SHARD, large, 0);
    expect(a.store).toBe('ddb');
    expect(b.store).toBe('s3');
    expect(JSON.stringify(large).length).toBeGreaterThan(SEGMENT_ITEM_MAX_BYTES);
    // A store of its own, so nothing comes from the writer's cache.
    const reader = new SegmentStore(
      clients.doc,
      clients.s3,
      t.runtime.config.tableName,
      t.runtime.config.bucketName,
    );
    expect(await reader.get(Q, SHARD, a)).toEqual(small);
    expect(await reader.get(Q, SHARD, b)).toEqual(large);
    expect(await reader.get(Q, SHARD, { id: '1', store: 's3' })).toBeUndefined();
    expect(await reader.get(Q, SHARD, { id: '1', store: 'ddb' })).toBeUndefined();
  });

  it("takes over a crashed invocation's leases where they are still the ones read, counting each takeover", async () => {
    const r = await newRange(4);
    const now = Date.now();
    const crashed = lease(now + 60_000, 'billing/crashed');
    await ranges.lease(Q, await got(r.start), [0, 1, 2], crashed);
    await ranges.ack(Q, r, [2], now);
    const read = await got(r.start);
    // An acked entry is not taken over: all or none.
    expect(await ranges.takeOver(Q, read, [0, 1, 2], lease(now + 90_000, 'billing/retry'))).toBeUndefined();
    const first = await ranges.takeOver(Q, read, [0, 1], lease(now + 90_000, 'billing/retry'));
    expect(first?.leases.get(0)).toMatchObject({ consumerId: 'billing/retry', takeovers: 1 });
    // The lease it read is gone: a second taker with the same read loses.
    expect(await ranges.takeOver(Q, read, [0], lease(now + 95_000, 'billing/late'))).toBeUndefined();
    const again = await ranges.takeOver(Q, first as Range, [0], lease(now + 99_000, 'billing/third'));
    expect(again?.leases.get(0)).toMatchObject({ consumerId: 'billing/third', takeovers: 2 });
    expect(again?.leases.get(1)).toMatchObject({ consumerId: 'billing/retry', takeovers: 1 });
  });

  it('gives back only the leases the giver wrote, and only unfinished ones', async () => {
    const r = await newRange(4);
    const now = Date.now();
    const mine = lease(now + 60_000, 'billing/mine');
    await ranges.lease(Q, await got(r.start), [0, 1, 2], mine);
    await ranges.ack(Q, r, [2], now);
    expect(await ranges.release(Q, r, [0, 1], lease(now + 60_000, 'billing/other'))).toBeUndefined();
    expect(await ranges.release(Q, r, [1, 2], mine)).toBeUndefined();
    const back = await ranges.release(Q, r, [0, 1], mine);
    expect(back?.leases.has(0)).toBe(false);
    expect(entryStatus(back as Range, 1, now)).toBe('free');
    // A taken-over lease is given back by its taker.
    const taker = lease(now + 70_000, 'billing/taker');
    await ranges.lease(Q, await got(r.start), [3], mine);
    await ranges.takeOver(Q, await got(r.start), [3], taker);
    expect(entryStatus((await ranges.release(Q, r, [3], taker)) as Range, 3, now)).toBe('free');
  });

  it("acks an entry that went to its key's hold area once, when the held message is handled", async () => {
    const r = await newRange(2);
    const now = Date.now();
    await ranges.lease(Q, await got(r.start), [0, 1], lease(now + 60_000));
    expect(await ranges.ackHeld(Q, r, 0, now)).toBeUndefined();
    await ranges.fail(Q, r, 0, 'live', now);
    const acked = await ranges.ackHeld(Q, r, 0, now + 5);
    expect(entryStatus(acked as Range, 0, now)).toBe('acked');
    expect(acked?.ackedAt).toBe(now + 5);
    expect(await ranges.ackHeld(Q, r, 0, now)).toBeUndefined();
  });

  it("keeps a key's held messages in log order, counts their deliveries and marks the key for the sweep", async () => {
    const holds = new KeyHolds(clients.doc, t.runtime.config.tableName);
    const held = (sequence: string) => ({
      key: 'acct/7',
      shard: SHARD,
      sequence,
      position: Number(sequence),
      envelope: env(Number(sequence), 10),
    });
    await holds.put(Q, [held('300')], 0, 7);
    await holds.put(Q, [held('25')], 0, 7);
    await holds.put(Q, [held('1000')], 0, 7);
    await holds.put(Q, [held('300')], 0, 7);
    expect((await holds.first(Q, 'acct/7', 10)).map((h) => h.sequence)).toEqual(['25', '300', '1000']);
    expect(await holds.count(Q, 'acct/7')).toBe(3);
    expect(await holds.has(Q, 'acct/7', '300')).toBe(true);
    expect(await holds.begin(Q, 'acct/7', '25')).toBe(1);
    expect(await holds.begin(Q, 'acct/7', '25')).toBe(2);
    // Holding it again (a batch offered again) keeps its delivery count.
    await holds.put(Q, [held('25')], 0, 7);
    expect((await holds.first(Q, 'acct/7', 1))[0]?.deliveries).toBe(2);
    expect(await holds.marked(Q, SHARD)).toEqual([{ key: 'acct/7', token: 7 }]);
    // Marked again since (token 8): an unmark with the token read before leaves it.
    await holds.mark(Q, SHARD, 'acct/7', 8);
    await holds.unmark(Q, SHARD, 'acct/7', 7);
    expect(await holds.marked(Q, SHARD)).toEqual([{ key: 'acct/7', token: 8 }]);
    await holds.woke(Q, SHARD, 'acct/7', 42);
    expect(await holds.marked(Q, SHARD)).toEqual([{ key: 'acct/7', token: 8, wokenAt: 42 }]);
    await holds.remove(Q, 'acct/7', '25');
    expect(await holds.begin(Q, 'acct/7', '25')).toBeUndefined();
    await holds.unmark(Q, SHARD, 'acct/7');
    expect(await holds.marked(Q, SHARD)).toEqual([]);
  });

  it('writes the entries admission held as finished from the start: never leased, never acked', async () => {
    const r = rangeAhead(3);
    const { start } = r;
    const written = await ranges.create(Q, r, 0, { finished: [1, 2] });
    const now = Date.now();
    const read = await got(start);
    expect([0, 1, 2].map((i) => entryStatus(read, i, now))).toEqual(['free', 'failed', 'failed']);
    // What create answers is the range a read finds (a woken receiver leases from it unread).
    expect(written).toEqual(read);
    expect(await ranges.ack(Q, r, [1], now)).toBeUndefined();
    expect(await ranges.ackHeld(Q, r, 1, now)).toBeDefined();
  });

  it('writes leases for receivers that waited as a lease write would: taken, and acked with them', async () => {
    const r = rangeAhead(3);
    const { start } = r;
    const now = Date.now();
    const lease = { expiresAt: now + 30_000, deliveredAt: now, consumerId: 'w-waited' };
    const written = await ranges.create(Q, r, 0, { finished: [2], leases: new Map([[0, lease]]) });
    const read = await got(start);
    expect(written).toEqual(read);
    expect([0, 1, 2].map((i) => entryStatus(read, i, now))).toEqual(['leased', 'free', 'failed']);
    expect(read.leases.get(0)).toEqual(lease);
    // Nobody else takes it; the free one beside it is still free.
    const other = { expiresAt: now + 30_000, deliveredAt: now, consumerId: 'w-other' };
    expect((await ranges.leaseFree(Q, r, [0, 1], other))?.won).toEqual([1]);
    expect(await ranges.ack(Q, r, [0], now)).toBeDefined();
  });

  it("leases a held message in the key's own item, only while nothing holds the key", async () => {
    const keys = new KeyStates(clients.doc, t.runtime.config.tableName);
    const now = Date.now();
    const hold = { expiresAt: now + 60_000, deliveredAt: now, consumerId: 'w-1' };
    // No hold area: nothing to take.
    expect(await keys.claimHeld(Q, 'held/1', 'h-2', hold)).toBeUndefined();
    expect(await keys.setHolding(Q, 'held/1', 11)).toBe(11);
    expect(await keys.claimHeld(Q, 'held/1', 'h-2', hold)).toBe(1);
    // The key is held by it: nobody else takes it, and only its live lease ends or extends.
    expect(await keys.claimHeld(Q, 'held/1', 'h-3', hold)).toBeUndefined();
    expect(await keys.extendHeld(Q, 'held/1', 'h-2', 2, now + 90_000, now)).toBe(false);
    expect(await keys.extendHeld(Q, 'held/1', 'h-2', 1, now + 90_000, now)).toBe(true);
    expect(await keys.endHeld(Q, 'held/1', 'h-2', 1, now, { release: true, lease: 'expired' })).toBe(false);
    expect(await keys.endHeld(Q, 'held/1', 'h-2', 1, now, { release: true, lease: 'live' })).toBe(true);
    expect(await keys.endHeld(Q, 'held/1', 'h-2', 1, now, { release: true, lease: 'live' })).toBe(false);
    expect(await keys.claimHeld(Q, 'held/1', 'h-3', hold)).toBe(2);
    expect(
      await keys.endHeld(Q, 'held/1', 'h-3', 2, now + 61_000, { release: false, lease: 'expired' }),
    ).toBe(true);
    // Kept by h-3 for its retry: nobody takes the key until it is released.
    expect(await keys.claimHeld(Q, 'held/1', 'h-4', hold)).toBeUndefined();
    expect(await keys.release(Q, 'held/1', 'h-3')).toBeDefined();
    expect(await keys.claimHeld(Q, 'held/1', 'h-4', hold)).toBe(3);
    // Parked: nothing of the hold area goes.
    await keys.endHeld(Q, 'held/1', 'h-4', 3, now, { release: true, lease: 'live' });
    expect(await keys.park(Q, 'held/1', 'h-4', '0', now)).toBe(true);
    expect(await keys.claimHeld(Q, 'held/1', 'h-5', hold)).toBeUndefined();
  });

  it('clears a hold area mark only with the token read, and only when no held message holds the key', async () => {
    const keys = new KeyStates(clients.doc, t.runtime.config.tableName);
    const token = await keys.setHolding(Q, 'tok/1');
    const newer = await keys.setHolding(Q, 'tok/1');
    expect(await keys.clearHolding(Q, 'tok/1', token)).toBe(false);
    const now = Date.now();
    await keys.claimHeld(Q, 'tok/1', 'x', { expiresAt: now + 1000, deliveredAt: now });
    expect(await keys.clearHolding(Q, 'tok/1', newer)).toBe(false);
    await keys.endHeld(Q, 'tok/1', 'x', 1, now, { release: true, lease: 'live' });
    expect(await keys.clearHolding(Q, 'tok/1', newer)).toBe(true);
    expect((await keys.getMany(Q, ['tok/1'])).get('tok/1')?.holding).toBeUndefined();
  });

  async function got(start: string) {
    const r = await ranges.get(Q, SHARD, start);
    if (!r) throw new Error(`range ${start} is missing`);
    return r;
  }
});

/** A range as its admission wrote it, before any lease: what a receiver that looked then holds. */
function asAdmitted(r: Pick<Range, 'shard' | 'start' | 'last' | 'count' | 'base' | 'segment'>): Range {
  return aRange(r.start, { shard: r.shard, last: r.last, count: r.count, base: r.base, segment: r.segment });
}
