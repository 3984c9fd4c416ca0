import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { consumerNamespace, ownStreamName } from '../../functions/core/config.js';
import { bindConsumer } from '../../functions/lambda-consumer/middleware.js';
import { buildServices } from '../../functions/services.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { type Call, calls, handler, healed, peak } from '../fixtures/ordered-lambda-consumer.js';
import { kinesisRecord } from '../helpers/kinesis-event.js';
import { queueApi } from '../helpers/queue-api.js';
import { type StreamRecord, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { until as untilWithin } from '../helpers/until.js';

/** This file's messages go through hold areas and wakes: its waits allow 30 s. */
const until = (check: () => Promise<boolean> | boolean, timeoutMs = 30_000) => untilWithin(check, timeoutMs);

/**
 * A Lambda consumer (test/fixtures/ordered-lambda-consumer.ts) of the ordered queue `ledger`,
 * run by the local runtime's event source mapping: per-key order with one message of a key in
 * the handler at a time, retries that hold their key, and a poisoned key parked while the
 * shard goes on.
 */

let t: TestRuntime;
const NS = consumerNamespace('ledger', 'books');

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'pushordered',
    queues: {
      ledger: {
        ordered: true,
        // One shard: every key shares it, so a stalled key would stall the others.
        shards: 1,
        backoff_seconds: [0],
        max_attempts: 3,
        consumers: [{ name: 'books', entry: 'test/fixtures/ordered-lambda-consumer.ts', batch_size: 50 }],
      },
    },
  });
});
afterAll(async () => {
  await t?.close();
});
beforeEach(() => {
  calls.length = 0;
  peak.perKey = 0;
});

const services = () => buildServices(t.runtime.config, t.runtime.clients);

/** What trace says of each message in the consumer's namespace; undefined before it was admitted. */
async function statesOf(ids: string[]): Promise<Record<string, string | undefined>> {
  const trace = services().trace;
  const states = await Promise.all(
    ids.map((id) =>
      trace.trace(NS, id).then(
        (t) => t.state,
        () => undefined,
      ),
    ),
  );
  return Object.fromEntries(ids.map((id, i) => [id, states[i]]));
}

const allIn = async (ids: string[], state: string) =>
  Object.values(await statesOf(ids)).every((s) => s === state);

/** Per key, the numbers of the messages the handler was given, in the order it was given them. */
function callOrderByKey(list: readonly Call[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const c of list) out.set(c.key as string, [...(out.get(c.key as string) ?? []), c.n]);
  return out;
}

/** A small deterministic generator, so a failing run can be repeated. */
function seeded(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

describe('an ordered queue with a Lambda consumer', () => {
  it('keeps per-key order through retries, one message of a key in the handler at a time', async () => {
    const q = queueApi(t, 'ledger');
    const random = seeded(42);
    const KEYS = 10;
    const PER_KEY = 12;
    const ids: string[] = [];
    for (let n = 0; n < PER_KEY; n += 3) {
      const batch = [];
      for (let k = 0; k < KEYS; k++) {
        for (let i = n; i < n + 3; i++) {
          const r = random();
          const failFirst = r < 0.08 ? 2 : r < 0.2 ? 1 : 0;
          batch.push({ message_id: `o-${k}-${i}`, key: `key-${k}`, payload: { n: i, failFirst } });
          ids.push(`o-${k}-${i}`);
        }
      }
      const results = await q.produce(batch);
      expect(results.every((r) => r.status === 'accepted')).toBe(true);
    }
    const succeeded = () => new Set(calls.filter((c) => c.ok).map((c) => c.message_id));
    await until(() => succeeded().size === ids.length, 60_000);
    await until(() => allIn(ids, 'acked'));

    expect(calls.some((c) => !c.ok)).toBe(true);
    // Each message succeeded once: an acked message is never handed over again.
    expect(calls.filter((c) => c.ok)).toHaveLength(ids.length);
    for (const [key, order] of callOrderByKey(calls)) {
      // Retries repeat a number; a later message never comes before an earlier one is done.
      expect(order, key).toEqual([...order].sort((a, b) => a - b));
      expect(new Set(order).size, key).toBe(PER_KEY);
    }
    expect(peak.perKey).toBe(1);
  });

  it('parks a poisoned key and holds its later messages while the other keys go on', async () => {
    const q = queueApi(t, 'ledger');
    const others = (tag: string) =>
      [0, 1, 2, 3].flatMap((k) =>
        [0, 1, 2].map((n) => ({ message_id: `${tag}-${k}-${n}`, key: `other-${tag}-${k}`, payload: { n } })),
      );
    const poisoned = (key: string) => [
      { message_id: `${key}-1`, key, payload: { n: 1 } },
      { message_id: `${key}-2`, key, payload: { n: 2, poison: true } },
      { message_id: `${key}-3`, key, payload: { n: 3 } },
      { message_id: `${key}-4`, key, payload: { n: 4 } },
    ];
    const first = [...poisoned('p'), ...others('a'), ...poisoned('s')];
    expect((await q.produce(first)).every((r) => r.status === 'accepted')).toBe(true);

    await until(() => allIn(['p-2', 's-2'], 'dead'));
    await until(() => allIn(['p-1', 's-1', ...others('a').map((m) => m.message_id)], 'acked'));
    await until(() => allIn(['p-3', 'p-4', 's-3', 's-4'], 'held'));
    expect(calls.filter((c) => c.message_id === 'p-2').map((c) => [c.attempt, c.ok])).toEqual([
      [1, false],
      [2, false],
      [3, false],
    ]);
    expect(calls.some((c) => ['p-3', 'p-4', 's-3', 's-4'].includes(c.message_id))).toBe(false);
    const parked = await services().parkedKeys.list(NS);
    expect(parked.map((k) => [k.key, k.dead_message_id]).sort()).toEqual([
      ['p', 'p-2'],
      ['s', 's-2'],
    ]);

    // The shard is not blocked: new messages of other keys go, new ones of a parked key wait.
    await q.produce([{ message_id: 'p-5', key: 'p', payload: { n: 5 } }, ...others('b')]);
    await until(() =>
      allIn(
        others('b').map((m) => m.message_id),
        'acked',
      ),
    );
    await until(() => allIn(['p-5'], 'held'));
    expect(calls.some((c) => c.message_id === 'p-5')).toBe(false);

    // Skip: the held messages come back through the log, in their order.
    const skipped = await services().parkedKeys.skip(NS, 'p', 'poison', 'tester');
    expect(skipped.released).toBe(3);
    await until(() => allIn(['p-3', 'p-4', 'p-5'], 'acked'));
    expect(callOrderByKey(calls).get('p')).toEqual([1, 2, 2, 2, 3, 4, 5]);
    expect((await statesOf(['p-2']))['p-2']).toBe('dead');

    // A skip that stopped after unparking, before sending the held messages back: the sweep does.
    const state = (await services().keys.getMany(NS, ['s'])).get('s');
    expect(await services().keys.unpark(NS, 's', state?.dead_message_id as string)).toBe(true);
    await until(() => allIn(['s-3', 's-4'], 'acked'));
    expect(callOrderByKey(calls).get('s')).toEqual([1, 2, 2, 2, 3, 4]);
    expect(peak.perKey).toBe(1);
    expect(healed.size).toBe(0);
  });

  it('releases a key whose holder was acked by an invocation that died before the release', async () => {
    const q = queueApi(t, 'ledger');
    await q.produce([
      { message_id: 'h-1', key: 'hk', payload: { n: 1, failFirst: 1 } },
      { message_id: 'h-2', key: 'hk', payload: { n: 2 } },
    ]);
    await until(() => allIn(['h-1', 'h-2'], 'acked'));
    // As if the invocation that acked h-1's retry died before releasing the key: busy for good,
    // and a new message of the key goes to the hold area behind it.
    expect(await services().keys.claim(NS, 'hk', 'h-1')).toBe('taken');
    await q.produce([{ message_id: 'h-3', key: 'hk', payload: { n: 3 } }]);
    await until(() => allIn(['h-3'], 'held'));
    // The event source offers that invocation's batch again: h-1's retry, acked already. It runs
    // one invocation of a shard at a time, and this one is called beside the runtime's own: the
    // key's hold marker is marked woken for a minute, so the sweep's wake record (the key is free
    // once this invocation releases it) is not answered by a second invocation draining h-3 too.
    const [h3] = await services().holds.first(NS, 'hk', 1);
    expect(h3?.envelope.message_id).toBe('h-3');
    await services().holds.woke(NS, h3?.shard as string, 'hk', Date.now() + 60_000);
    const retry = (await t.records('ledger')).find(
      (r) => r.envelope.message_id === 'h-1' && r.envelope.entry === 2,
    );
    expect(retry).toBeDefined();
    const consumer = bindConsumer(handler, {
      config: t.runtime.config,
      clients: t.runtime.clients,
      queue: 'ledger',
      consumer: 'books',
      logger: new Logger({ logLevel: 'SILENT' }),
    });
    const out = await consumer(
      { Records: [kinesisRecord(retry as StreamRecord, ownStreamName('pushordered', 'ledger'))] },
      lambdaContext('consumer-ledger-books', 60_000),
    );
    expect(out.batchItemFailures).toEqual([]);
    await until(() => allIn(['h-3'], 'acked'));
    expect(callOrderByKey(calls).get('hk')).toEqual([1, 1, 2, 3]);
    expect((await services().keys.getMany(NS, ['hk'])).get('hk')?.busy_with).toBeUndefined();
  });

  it('finishes the failure of a held message that marked its key but was never written', async () => {
    const q = queueApi(t, 'ledger');
    await q.produce([
      { message_id: 'w-1', key: 'wk', payload: { n: 1, poison: true } },
      { message_id: 'w-2', key: 'wk', payload: { n: 2 } },
      { message_id: 'w-3', key: 'wk', payload: { n: 3 } },
    ]);
    await until(() => allIn(['w-1'], 'dead'));
    await until(() => allIn(['w-2', 'w-3'], 'held'));
    // As if w-2, delivered from the hold area, failed and its key was marked busy with its retry,
    // and then the failure's write failed: no retry of w-2 is on its way.
    expect(await services().keys.unpark(NS, 'wk', 'w-1', 'w-2')).toBe(true);
    await until(() => allIn(['w-2', 'w-3'], 'acked'));
    expect(
      calls.filter((c) => c.key === 'wk' && c.n > 1).map((c) => [c.message_id, c.attempt, c.ok]),
    ).toEqual([
      ['w-2', 2, true],
      ['w-3', 1, true],
    ]);
    const trace = await services().trace.trace(NS, 'w-2');
    expect(trace.attempts.map((a) => a.reason)).toEqual(['lease_expired']);
  });

  it('drops a hold item its message went on from, without holding its key, so the messages behind it go', async () => {
    const q = queueApi(t, 'ledger');
    await q.produce([{ message_id: 'lo-1', key: 'lok', payload: { n: 1, failFirst: 1 } }]);
    await until(() => allIn(['lo-1'], 'acked'));
    // As under faults: lo-1, delivered from the hold area, failed and its retry was written, and the
    // removal of its hold item failed; the retry was acked since, and the key is free.
    const first = (await t.records('ledger')).find(
      (r) => r.envelope.message_id === 'lo-1' && r.envelope.entry === 1,
    );
    expect(first).toBeDefined();
    const { keys, holds } = services();
    await holds.put(
      NS,
      [
        {
          key: 'lok',
          shard: first?.shardId as string,
          sequence: first?.sequenceNumber as string,
          position: 0,
          envelope: first?.envelope as StreamRecord['envelope'],
        },
      ],
      Math.floor(Date.now() / 1000) + 3600,
      await keys.setHolding(NS, 'lok'),
    );
    // A later message of the key goes behind the leftover, which is delivered again (attempt 1,
    // which the handler fails), dropped, and does not hold the key.
    await q.produce([{ message_id: 'lo-2', key: 'lok', payload: { n: 2 } }]);
    await until(() => allIn(['lo-2'], 'acked'));
    expect(calls.filter((c) => c.key === 'lok').map((c) => [c.message_id, c.attempt, c.ok])).toEqual([
      ['lo-1', 1, false],
      ['lo-1', 2, true],
      ['lo-1', 1, false],
      ['lo-2', 1, true],
    ]);
    expect((await keys.getMany(NS, ['lok'])).get('lok')?.busy_with).toBeUndefined();
    expect(await holds.first(NS, 'lok', 10)).toEqual([]);
    // lo-1 ends as its retry did: nothing of the leftover was written to it.
    expect((await statesOf(['lo-1']))['lo-1']).toBe('acked');
  });

  it('redrives a dead holder first, then the messages held behind it, in order', async () => {
    const q = queueApi(t, 'ledger');
    const poisoned = (key: string) => [
      { message_id: `${key}-1`, key, payload: { n: 1, poison: true } },
      { message_id: `${key}-2`, key, payload: { n: 2 } },
      { message_id: `${key}-3`, key, payload: { n: 3 } },
    ];
    expect(
      (await q.produce([...poisoned('r'), ...poisoned('u')])).every((r) => r.status === 'accepted'),
    ).toBe(true);
    await until(() => allIn(['r-1', 'u-1'], 'dead'));
    await until(() => allIn(['r-2', 'r-3', 'u-2', 'u-3'], 'held'));
    healed.add('r-1');
    healed.add('u-1');

    // Through the API: the consumer's own DLQ, redriven to it alone.
    const started = await t.api('/queues/ledger/redrive?consumer=books', {
      body: { rate_per_sec: 50, filter: { message_ids: ['r-1'] } },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    await until(() => allIn(['r-1', 'r-2', 'r-3'], 'acked'));
    expect(callOrderByKey(calls).get('r')).toEqual([1, 1, 1, 1, 2, 3]);
    expect(calls.filter((c) => c.message_id === 'r-1').at(-1)).toMatchObject({ attempt: 1, ok: true });

    // A redrive that stopped after putting the dead message back, before unparking its key:
    // the sweep finishes it, and the redriven message still goes first.
    const dead = (await services().messages.getMany(NS, ['u-1'], true)).get('u-1');
    expect(dead?.state).toBe('dead');
    expect(
      await services().requeue.reappend(NS, [dead as NonNullable<typeof dead>], 'dead', Date.now()),
    ).toHaveLength(1);
    await until(() => allIn(['u-1', 'u-2', 'u-3'], 'acked'));
    expect(callOrderByKey(calls).get('u')).toEqual([1, 1, 1, 1, 2, 3]);
    expect(await services().parkedKeys.list(NS)).toEqual([]);
    expect(peak.perKey).toBe(1);
    healed.clear();
  });
});
