import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyRun } from '../../functions/core/ordering.js';
import type { Range } from '../../functions/core/ranges.js';
import { entryName, OrderedLook } from '../../functions/delivery/ordered-look.js';
import { buildServices } from '../../functions/services.js';
import type { SegmentEntry } from '../../functions/store/segments.js';
import { queueApi, type Received } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { until } from '../helpers/until.js';

/** Ordered queues: one message in flight per key, in accepted order, and key parking. */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'ordering',
    queues: {
      // A lease as long as the default: settles under load come seconds after the receive, and
      // the test never waits for a lease to end.
      ord: { ordered: true, shards: 2, lease_seconds: 30, backoff_seconds: [0], max_attempts: 20 },
      poison: { ordered: true, shards: 1, backoff_seconds: [0], max_attempts: 2 },
      park: { ordered: true, shards: 1, backoff_seconds: [0], max_attempts: 3 },
      deep: { ordered: true, shards: 1, backoff_seconds: [0], max_attempts: 3 },
      held: { ordered: true, shards: 1, backoff_seconds: [0], max_attempts: 3 },
      batch: { ordered: true, shards: 1, backoff_seconds: [0], max_attempts: 3, max_per_key: 5 },
      span: { ordered: true, shards: 1, max_per_key: 10 },
      batchpark: {
        ordered: true,
        shards: 1,
        backoff_seconds: [0],
        max_attempts: 2,
        max_per_key: 3,
        lease_seconds: 1,
      },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

interface Event {
  at: number;
  kind: 'delivered' | 'ack' | 'nack';
  key: string;
  seq: number;
}

describe('per-key order', () => {
  it('holds under 8 concurrent consumers with random nacks', async () => {
    const q = queueApi(t, 'ord');
    const KEYS = 12;
    const PER_KEY = 8;
    const messages = [];
    for (let seq = 0; seq < PER_KEY; seq++) {
      for (let k = 0; k < KEYS; k++)
        messages.push({ message_id: `o-${k}-${seq}`, key: `key-${k}`, payload: { k, seq } });
    }
    const results = await q.produce(messages);
    expect(results.every((r) => r.status === 'accepted')).toBe(true);

    const events: Event[] = [];
    const acked = new Set<string>();
    const total = KEYS * PER_KEY;
    const deadline = Date.now() + 90_000;
    const consumer = async () => {
      while (acked.size < total && Date.now() < deadline) {
        const got: Received[] = await q.receive({ max_messages: 3, wait_seconds: 1 });
        const at = performance.now();
        for (const m of got) events.push({ at, kind: 'delivered', key: m.key as string, seq: m.payload.seq });
        for (const m of got) {
          const nack = Math.random() < 0.25;
          // The settle is stamped before it is sent: the server acts on it only afterwards.
          events.push({
            at: performance.now(),
            kind: nack ? 'nack' : 'ack',
            key: m.key as string,
            seq: m.payload.seq,
          });
          if (nack) {
            const res = await q.nack({ receipt: m.receipt, error: 'random', retry_after_seconds: 0 });
            expect(res.status).toBe(200);
          } else {
            const [r] = await q.ack([m.receipt]);
            expect(r?.status).toBe('acked');
            acked.add(m.message_id);
          }
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, consumer));
    expect(acked.size).toBe(total);

    // Checker: per key, each delivery is of the oldest unacked message and starts only after the
    // previous delivery of the key was settled.
    events.sort((a, b) => a.at - b.at);
    const byKey = new Map<string, Event[]>();
    for (const e of events) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e]);
    expect(byKey.size).toBe(KEYS);
    for (const [key, list] of byKey) {
      let inFlight: number | undefined;
      let next = 0;
      for (const e of list) {
        if (e.kind === 'delivered') {
          expect(inFlight, `${key}: a second message in flight`).toBeUndefined();
          expect(e.seq, `${key}: delivered out of order`).toBe(next);
          inFlight = e.seq;
        } else {
          expect(e.seq).toBe(inFlight);
          inFlight = undefined;
          if (e.kind === 'ack') next++;
        }
      }
      expect(next, `${key}: every message acked once`).toBe(PER_KEY);
    }
  }, 120_000);
});

/** Receives and acks everything except what `fail` says to nack, until `done` holds. */
async function consume(
  queue: string,
  options: {
    fail?: (m: Received) => { retryable: boolean } | undefined;
    done: (delivered: Received[]) => boolean;
    timeoutMs: number;
  },
): Promise<Received[]> {
  const q = queueApi(t, queue);
  const delivered: Received[] = [];
  const deadline = Date.now() + options.timeoutMs;
  while (!options.done(delivered) && Date.now() < deadline) {
    const got = await q.receive({ max_messages: 50, wait_seconds: 1 });
    delivered.push(...got);
    const toAck: string[] = [];
    for (const m of got) {
      const failure = options.fail?.(m);
      if (failure) await q.nack({ receipt: m.receipt, retryable: failure.retryable, error: 'poison' });
      else toAck.push(m.receipt);
    }
    if (toAck.length) await q.ack(toAck);
    await t.runtime.sweep.fire();
  }
  return delivered;
}

describe('retried key holder', () => {
  it('comes back even with more successors waiting than one receive reads', async () => {
    const q = queueApi(t, 'deep');
    const messages = Array.from({ length: 130 }, (_, i) => ({
      message_id: `deep-${i}`,
      key: 'hot',
      payload: i,
    }));
    for (let i = 0; i < messages.length; i += 65) await q.produce(messages.slice(i, i + 65));
    const [first] = await q.receiveAll(1, 8000);
    expect(first?.message_id).toBe('deep-0');
    await q.nack({ receipt: first?.receipt, retry_after_seconds: 0 });
    const [again] = await q.receiveAll(1, 10_000);
    expect(again?.message_id).toBe('deep-0');
    expect(again?.attempt).toBe(2);
    await q.ack([again?.receipt as string]);
    const [next] = await q.receiveAll(1, 8000);
    expect(next?.message_id).toBe('deep-1');
    await q.ack([next?.receipt as string]);
  }, 40_000);
});

/** Receives and acks, firing the sweep between receives, until `n` messages came: them, in order. */
async function ackInTurn(queue: string, n: number): Promise<Received[]> {
  const q = queueApi(t, queue);
  const came: Received[] = [];
  const deadline = Date.now() + 15_000;
  while (came.length < n && Date.now() < deadline) {
    await t.runtime.sweep.fire();
    const got = await q.receive({ max_messages: 10, wait_seconds: 1 });
    came.push(...got);
    if (got.length) await q.ack(got.map((m) => m.receipt));
  }
  return came;
}

/**
 * Three messages of `key` on the `held` queue (`<key>-0..2`): the head received and acked, then the
 * first of the key's hold area received (with `options`).
 */
/** Where a key's later messages wait: in their ranges, or (a parked key's) in its hold area. */
type Waits = 'ranges' | 'hold area';

/**
 * A key's second message, delivered after its first: from its range (the first acked), or from
 * the key's hold area (the first dead-lettered, the rest moved there by the sweep, then skipped).
 */
async function firstHeld(
  key: string,
  options: { lease_seconds?: number } = {},
  from: Waits = 'hold area',
): Promise<Received | undefined> {
  const q = queueApi(t, 'held');
  await q.produce([0, 1, 2].map((i) => ({ message_id: `${key}-${i}`, key, payload: i })));
  const [head] = await q.receiveAll(1, 5000);
  expect(head?.message_id).toBe(`${key}-0`);
  if (from === 'ranges') await q.ack([head?.receipt as string]);
  else {
    await q.nack({ receipt: head?.receipt, retryable: false, error: 'poison' });
    await until(async () => {
      await t.runtime.sweep.fire();
      const parked = (await t.api('/queues/held/keys/parked')).body.keys as { key: string; held: number }[];
      return parked.some((p) => p.key === key && p.held === 2);
    });
    expect((await t.api(`/queues/held/keys/${key}/skip`, { body: { reason: 'test' } })).status).toBe(200);
  }
  return (await q.receiveAll(1, 5000, options))[0];
}

describe('a key with messages waiting behind its head', () => {
  it('holds its later messages behind one produced with a delay', async () => {
    const q = queueApi(t, 'held');
    // Delayed past what the steps before the empty receive take on a loaded machine (2-4 s seen).
    await q.produce([{ message_id: 'dl-0', key: 'late', payload: 0, delay_seconds: 6 }]);
    await q.produce([
      { message_id: 'dl-1', key: 'late', payload: 1 },
      { message_id: 'dl-other', key: 'other', payload: 0 },
    ]);
    const first = await q.receiveAll(1, 5000);
    expect(first.map((m) => m.message_id)).toEqual(['dl-other']);
    await q.ack(first.map((m) => m.receipt));
    expect(await q.receive({ wait_seconds: 1 })).toEqual([]);
    expect((await ackInTurn('held', 2)).map((m) => m.message_id)).toEqual(['dl-0', 'dl-1']);
  }, 30_000);

  it.each<Waits>(['ranges', 'hold area'])(
    'takes back a message from its %s whose lease ran out, as a failed attempt, and keeps the order',
    async (from) => {
      const q = queueApi(t, 'held');
      const key = `hx-${from === 'ranges' ? 'r' : 'h'}`;
      // Its second message's lease runs out.
      const held = await firstHeld(key, { lease_seconds: 1 }, from);
      expect(held).toMatchObject({ message_id: `${key}-1`, attempt: 1 });
      await new Promise((r) => setTimeout(r, 1200));
      expect((await q.ack([held?.receipt as string]))[0]?.status).toBe('stale_receipt');
      const order = (await ackInTurn('held', 2)).map((m) => [m.message_id, m.attempt]);
      expect(order).toEqual([
        [`${key}-1`, 2],
        [`${key}-2`, 1],
      ]);
      const trace = (await t.api(`/queues/held/messages/${key}-1`)).body;
      expect(trace.state).toBe('acked');
      expect(trace.attempts).toEqual([expect.objectContaining({ attempt: 1, reason: 'lease_expired' })]);
    },
    30_000,
  );
});

describe('a key left busy by an ack that stopped half way', () => {
  it('is freed by the sweep once the held lease it kept runs out', async () => {
    const held = await firstHeld('hw', { lease_seconds: 1 });
    expect(held?.message_id).toBe('hw-1');
    // The ack's first writes landed (the entry acked, the hold item gone), the key's release not.
    const { ranges, holds } = buildServices(t.runtime.config, t.runtime.clients);
    const [h] = await holds.first('held', 'hw', 1);
    const at = h && (await ranges.entryAt('held', h.shard, h));
    await ranges.ackHeld('held', at?.range as Range, at?.index as number, Date.now());
    await holds.remove('held', 'hw', h?.sequence as string);
    await new Promise((r) => setTimeout(r, 1200));
    expect((await ackInTurn('held', 1)).map((m) => [m.message_id, m.attempt])).toEqual([['hw-2', 1]]);
    expect((await t.api('/queues/held/messages/hw-1')).body.state).toBe('acked');
  }, 30_000);
});

describe('a message of a busy key given back', () => {
  it.each<Waits>(['ranges', 'hold area'])(
    'comes again first from its %s, with the same attempt and no history',
    async (from) => {
      const q = queueApi(t, 'held');
      const key = `gb-${from === 'ranges' ? 'r' : 'h'}`;
      const held = await firstHeld(key, {}, from);
      expect(held?.message_id).toBe(`${key}-1`);
      const back = await q.nack({ receipt: held?.receipt, release: true });
      expect(back.body).toMatchObject({ status: 'retry_scheduled', attempt: 1 });
      const order = (await ackInTurn('held', 2)).map((m) => [m.message_id, m.attempt]);
      expect(order).toEqual([
        [`${key}-1`, 1],
        [`${key}-2`, 1],
      ]);
      expect((await t.api(`/queues/held/messages/${key}-1`)).body.attempts).toEqual([]);
    },
    30_000,
  );
});

describe('key parking', () => {
  it('a poison key on a shard does not hold up 500 other keys on the same shard', async () => {
    const q = queueApi(t, 'poison');
    const bad = Array.from({ length: 5 }, (_, i) => ({ message_id: `bad-${i}`, key: 'bad', payload: i }));
    const others = Array.from({ length: 500 }, (_, i) => ({
      message_id: `ok-${i}`,
      key: `k-${i}`,
      payload: i,
    }));
    await q.produce(bad);
    for (let i = 0; i < others.length; i += 250) await q.produce(others.slice(i, i + 250));
    const delivered = await consume('poison', {
      fail: (m) => (m.key === 'bad' ? { retryable: true } : undefined),
      // bad-0's retry is a new entry at the end of the log: it may come after the others.
      done: (d) =>
        new Set(d.filter((m) => m.key !== 'bad').map((m) => m.message_id)).size >= 500 &&
        d.filter((m) => m.key === 'bad').length >= 2,
      timeoutMs: 60_000,
    });
    const acked = new Set(delivered.filter((m) => m.key !== 'bad').map((m) => m.message_id));
    expect(acked.size).toBe(500);
    // Only the first bad message was ever delivered (twice: max_attempts 2), then the key parked.
    const badDeliveries = delivered.filter((m) => m.key === 'bad');
    expect(badDeliveries.map((m) => [m.message_id, m.attempt])).toEqual([
      ['bad-0', 1],
      ['bad-0', 2],
    ]);
    const parked = await t.api('/queues/poison/keys/parked');
    expect(parked.body.keys).toHaveLength(1);
    expect(parked.body.keys[0]).toMatchObject({ key: 'bad', dead_message_id: 'bad-0' });
    expect((await q.stats()).parked_keys).toBe(1);
  }, 90_000);

  it('parks a key, holds its later messages, and redrive delivers the dead one first, then the rest in order', async () => {
    const q = queueApi(t, 'park');
    await q.produce([0, 1, 2].map((i) => ({ message_id: `p-${i}`, key: 'acct-1', payload: i })));
    const [first] = await q.receiveAll(1, 5000);
    expect(first?.message_id).toBe('p-0');
    expect((await q.nack({ receipt: first?.receipt, retryable: false, error: 'bad row' })).body.status).toBe(
      'dead_lettered',
    );
    // Parked: nothing of the key is delivered, and a message produced now is held.
    await q.produce([
      { message_id: 'p-3', key: 'acct-1', payload: 3 },
      { message_id: 'free-1', key: 'other', payload: 0 },
    ]);
    const meanwhile = await q.receiveAll(1, 3000);
    expect(meanwhile.map((m) => m.message_id)).toEqual(['free-1']);
    await q.ack(meanwhile.map((m) => m.receipt));
    // p-1 and p-2 waited in their ranges behind p-0; once the key is parked, the sweep moves them
    // and p-3 into the key's hold area, so the shard's commit point passes them.
    const parked = async () => (await t.api('/queues/park/keys/parked')).body.keys;
    // A pass that began before p-3 was admitted moves it at the next one.
    await until(async () => {
      await t.runtime.sweep.fire();
      return (await parked())[0]?.held === 3;
    });
    expect(await parked()).toEqual([
      expect.objectContaining({ key: 'acct-1', dead_message_id: 'p-0', held: 3 }),
    ]);
    const trace = await t.api('/queues/park/messages/p-3');
    expect(trace.body.state).toBe('held');

    const redrive = await t.api('/queues/park/redrive', {
      body: { rate_per_sec: 100, filter: { message_ids: ['p-0'] } },
    });
    expect(redrive.status).toBe(202);
    const order: string[] = [];
    const deadline = Date.now() + 15_000;
    while (order.length < 4 && Date.now() < deadline) {
      await t.runtime.sweep.fire();
      const got = await q.receive({ max_messages: 10, wait_seconds: 1 });
      // One at a time per key: never two of acct-1 in one answer.
      expect(got.filter((m) => m.key === 'acct-1').length).toBeLessThanOrEqual(1);
      for (const m of got) order.push(m.message_id);
      if (got.length) await q.ack(got.map((m) => m.receipt));
    }
    expect(order).toEqual(['p-0', 'p-1', 'p-2', 'p-3']);
    expect((await t.api('/queues/park/keys/parked')).body.keys).toEqual([]);
  }, 40_000);

  it('skip releases a parked key without its dead message and records why', async () => {
    const q = queueApi(t, 'park');
    await q.produce([0, 1].map((i) => ({ message_id: `s-${i}`, key: 'acct-2', payload: i })));
    const [first] = await q.receiveAll(1, 5000);
    await q.nack({ receipt: first?.receipt, retryable: false, error: 'unfixable' });
    expect((await q.receive({ wait_seconds: 1 })).map((m) => m.message_id)).toEqual([]);
    const skip = await t.api(`/queues/park/keys/${encodeURIComponent('acct-2')}/skip`, {
      body: { reason: 'row deleted upstream' },
    });
    expect(skip.status).toBe(200);
    const [next] = await q.receiveAll(1, 5000);
    expect(next?.message_id).toBe('s-1');
    await q.ack([next?.receipt as string]);
    expect((await q.dlq('s-0')).status).toBe(200);
    const audit = (await t.api('/queues/park/audit')).body.entries;
    expect(audit[0]).toMatchObject({
      action: 'skip',
      actor: 'local-admin',
      target: 'acct-2',
      reason: 'row deleted upstream',
    });
    const again = await t.api('/queues/park/keys/acct-2/skip', { body: { reason: 'twice' } });
    expect(again.status).toBe(404);
  }, 30_000);
});

describe('per-key batches (max_per_key)', () => {
  it("lease a key's consecutive messages in one answer, in order; a nack gives the rest back and its retry goes first", async () => {
    const q = queueApi(t, 'batch');
    await q.produce([
      ...[0, 1, 2, 3, 4, 5].map((i) => ({ message_id: `A-${i}`, key: 'A', payload: i })),
      { message_id: 'B-0', key: 'B', payload: 0 },
      { message_id: 'B-1', key: 'B', payload: 1 },
    ]);
    const got = await q.receiveAll(7, 5000, { max_messages: 10 });
    const ids = (key: string, ms: Received[]) => ms.filter((m) => m.key === key).map((m) => m.message_id);
    expect(ids('A', got)).toEqual(['A-0', 'A-1', 'A-2', 'A-3', 'A-4']);
    expect(ids('B', got)).toEqual(['B-0', 'B-1']);
    // Nothing more of either key while their batches are out.
    expect(await q.receive({ wait_seconds: 0 })).toEqual([]);
    const receipt = (id: string) => got.find((m) => m.message_id === id)?.receipt as string;
    expect((await q.ack([receipt('A-0')]))[0]?.status).toBe('acked');
    const nack = await q.nack({ receipt: receipt('A-1'), error: 'A-1 failed', retry_after_seconds: 0 });
    expect(nack.body).toMatchObject({ status: 'retry_scheduled', attempt: 2 });
    // The rest of the batch went back with the nack: its receipts no longer ack.
    expect((await q.ack([receipt('A-2')]))[0]?.status).toBe('stale_receipt');
    await q.ack(['B-0', 'B-1'].map(receipt));
    // A-1's retry comes alone, first; then the rest of the key, A-2 again at its first attempt.
    const retry = await q.receiveAll(1, 5000, { max_messages: 10 });
    expect(retry.map((m) => [m.message_id, m.attempt])).toEqual([['A-1', 2]]);
    await q.ack(retry.map((m) => m.receipt));
    const rest = await q.receiveAll(4, 5000, { max_messages: 10 });
    expect(rest.map((m) => [m.message_id, m.attempt])).toEqual([
      ['A-2', 1],
      ['A-3', 1],
      ['A-4', 1],
      ['A-5', 1],
    ]);
    await q.ack(rest.map((m) => m.receipt));
    const trace = (await t.api('/queues/batch/messages/A-1')).body;
    expect(trace.attempts).toEqual([expect.objectContaining({ attempt: 1, error: 'A-1 failed' })]);
  }, 30_000);
});

describe('a parked key whose batch came back when its lease ran out', () => {
  it('keeps its order through the hold area: the messages waiting in place for their next attempt go first', async () => {
    const q = queueApi(t, 'batchpark');
    await q.produce([0, 1, 2, 3].map((i) => ({ message_id: `P-${i}`, key: 'P', payload: i })));
    const batch = await q.receiveAll(3, 5000, { max_messages: 10 });
    expect(batch.map((m) => m.message_id)).toEqual(['P-0', 'P-1', 'P-2']);
    // The batch's lease runs out: each of its messages waits in its range for its second attempt.
    const head = await (async () => {
      for (;;) {
        await t.runtime.sweep.fire();
        const [m] = await q.receive({ max_messages: 10, wait_seconds: 1 });
        if (m) return m;
      }
    })();
    expect([head.message_id, head.attempt]).toEqual(['P-0', 2]);
    // Its head goes to the DLQ: the key parks, and the sweep moves what waits behind it.
    await q.nack({ receipt: head.receipt, retryable: false, error: 'poison' });
    await until(async () => {
      await t.runtime.sweep.fire();
      const parked = (await t.api('/queues/batchpark/keys/parked')).body.keys as {
        key: string;
        held: number;
      }[];
      return parked.some((p) => p.key === 'P' && p.held === 3);
    });
    expect((await t.api('/queues/batchpark/keys/P/skip', { body: { reason: 'test' } })).status).toBe(200);
    const rest: Received[] = [];
    while (rest.length < 3) {
      const got = await q.receiveAll(1, 5000, { max_messages: 10 });
      rest.push(...got);
      await q.ack(got.map((m) => m.receipt));
    }
    expect(rest.map((m) => [m.message_id, m.attempt])).toEqual([
      ['P-1', 2],
      ['P-2', 2],
      ['P-3', 1],
    ]);
  }, 30_000);
});

describe('a look whose key batch spans two ranges', () => {
  it("leases none of the second range's entries when another receiver took the first's since the look", async () => {
    const q = queueApi(t, 'span');
    const services = buildServices(t.runtime.config, t.runtime.clients);
    const config = t.runtime.config.tenant.queues.span;
    if (!config) throw new Error('no queue span');
    // Each round: 15 messages of other keys, then 10 of one key, so the key's batch spans the
    // first range (positions 15-19) and the second (20-24). The second round runs contended (the
    // first round's lost write makes this instance read a range before it writes it).
    const look = new OrderedLook(services);
    for (const round of [0, 1]) {
      const key = `span-${round}`;
      await q.produce([
        ...Array.from({ length: 15 }, (_, i) => ({ key: `other-${round}-${i}`, payload: i })),
        ...Array.from({ length: 10 }, (_, i) => ({ message_id: `${key}-${i}`, key, payload: i })),
      ]);
      await t.runtime.eventSource.drained(10_000);
      const shard = (await t.records('span'))[0]?.shardId as string;
      const now = Date.now();
      const seen = await look.runs('span', config, shard, 100, now);
      const run = seen.runs.find((r) => r.entries.length === 10);
      expect(new Set(run?.entries.map((e) => e.range.start)).size).toBe(2);
      const segments = async (runs: readonly KeyRun[]) =>
        new Map(
          await Promise.all(
            runs.flatMap((r) =>
              r.entries.map(
                async (e) =>
                  [entryName(e), await services.segments.entryAt('span', e.range, e.index)] as const,
              ),
            ),
          ),
        ) as Map<string, SegmentEntry>;
      const lease = (consumerId: string) => ({ expiresAt: now + 60_000, deliveredAt: now, consumerId });
      const looked = [{ runs: run ? [run] : [], blocked: seen.blocked, waits: new Set<string>() }];
      // Another receiver takes the key's first five (its batch of the first range) meanwhile.
      const other = await new OrderedLook(services).lease('span', looked, 5, lease('early'), segments);
      expect(other.map((l) => l.entry.envelope.message_id)).toEqual(
        [0, 1, 2, 3, 4].map((i) => `${key}-${i}`),
      );
      const leased = await look.lease('span', looked, 10, lease('late'), segments);
      // The key's later five wait for the first five: the late look leased none of them.
      expect(leased).toEqual([]);
      const first = other[0]?.range as Range;
      expect(
        await services.ranges.ack(
          'span',
          first,
          other.map((l) => l.index),
          Date.now(),
        ),
      ).toBeDefined();
      const rest = await q.receiveAll(20, 5000, { max_messages: 20 });
      expect(rest.filter((m) => m.key === key).map((m) => m.message_id)).toEqual(
        [5, 6, 7, 8, 9].map((i) => `${key}-${i}`),
      );
      await q.ack(rest.map((m) => m.receipt));
    }
  }, 60_000);
});

describe('an entry delivered again in place', () => {
  it('refuses every receipt of its earlier delivery: ack, extend and nack', async () => {
    const q = queueApi(t, 'held');
    await q.produce([{ message_id: 'again-0', key: 'again', payload: 0 }]);
    const [first] = await q.receiveAll(1, 5000, { lease_seconds: 1 });
    expect(first).toMatchObject({ message_id: 'again-0', attempt: 1 });
    await new Promise((r) => setTimeout(r, 1200));
    await t.runtime.sweep.fire();
    const [second] = await q.receiveAll(1, 5000);
    expect(second).toMatchObject({ message_id: 'again-0', attempt: 2 });
    // The same entry, a new delivery: the first one's receipt names a lease that is gone.
    expect((await q.ack([first?.receipt as string]))[0]?.status).toBe('stale_receipt');
    expect((await q.extend({ receipt: first?.receipt, lease_seconds: 30 })).status).toBe(409);
    expect((await q.nack({ receipt: first?.receipt })).status).toBe(409);
    expect((await q.ack([second?.receipt as string]))[0]?.status).toBe('acked');
    // Sent again after its answer was lost, the second delivery's ack is still acked; the first's stale.
    expect((await q.ack([second?.receipt as string]))[0]?.status).toBe('acked');
    expect((await q.ack([first?.receipt as string]))[0]?.status).toBe('stale_receipt');
  }, 30_000);
});
