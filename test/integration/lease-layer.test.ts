import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeleteCommand, GetCommand, ScanCommand } from '../../functions/aws/dynamodb.js';
import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  PutRecordsCommand,
} from '../../functions/aws/kinesis.js';
import { ownStreamName } from '../../functions/core/config.js';
import { type Envelope, encodeEnvelope } from '../../functions/core/envelope.js';
import { entryStatus } from '../../functions/core/ranges.js';
import { OrderedLook } from '../../functions/delivery/ordered-look.js';
import { buildServices } from '../../functions/services.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The lease layer over the log, end to end: which copies in the log are admitted, what a receive
 * answers when what it would deliver is too big or cannot be read, and what it writes.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'layer',
    queues: {
      copies: { shards: 1 },
      big: { shards: 1 },
      // Dispatch admits it: a segment the api wrote itself is in its cache, readable whatever happens.
      lost: { shards: 1, fast_admission: 'off' },
      gap: { shards: 1, window_size: 6, lease_seconds: 60 },
      gapkeyed: { shards: 1, window_size: 6, lease_seconds: 60, ordered: true },
      // Due after the checks that it waits (three requests; 1 s was close on a loaded machine).
      waits: { shards: 1, backoff_seconds: [3] },
      waitgap: { shards: 1, window_size: 6, lease_seconds: 20 },
      gaprace: { shards: 1, window_size: 6, lease_seconds: 60 },
      gapracekeyed: { shards: 1, window_size: 6, lease_seconds: 60, ordered: true },
      lookpast: { shards: 1, ordered: true },
      lookblock: { shards: 1, ordered: true, max_attempts: 1 },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

const append = (queue: string, envelopes: Envelope[]) =>
  t.runtime.clients.kinesis.send(
    new PutRecordsCommand({
      StreamName: ownStreamName('layer', queue),
      Records: envelopes.map((e) => ({ PartitionKey: e.message_id, Data: encodeEnvelope(e) })),
    }),
  );

/** Everything receivable now, acked as it comes. */
async function drain(queue: string, ms = 3000): Promise<string[]> {
  const q = queueApi(t, queue);
  const seen: string[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const got = await q.receive({ max_messages: 10, wait_seconds: 1 });
    seen.push(...got.map((m) => m.message_id));
    if (got.length) await q.ack(got.map((m) => m.receipt));
  }
  return seen;
}

describe('admission', () => {
  it('admits a producer id once whatever copies are in the log, also two copies in one batch', async () => {
    const q = queueApi(t, 'copies');
    expect((await q.produce([{ message_id: 'c-1', payload: 1 }]))[0]?.status).toBe('accepted');
    const [copy] = (await t.records('copies')).map((r) => r.envelope);
    // A producer's crash-retry leaves more copies of the same entry: one beside the first, then
    // two more that reach dispatch in one batch (BatchGetItem refuses a repeated key).
    await append('copies', [copy as Envelope]);
    await append('copies', [copy as Envelope, copy as Envelope]);
    await q.produce([{ message_id: 'c-2', payload: 2 }]);
    const seen = await drain('copies');
    expect(seen.sort()).toEqual(['c-1', 'c-2']);
  });

  it('admits a copy with no dedup record once, and passes the later one over', async () => {
    const at = new Date().toISOString();
    const env: Envelope = {
      v: 1,
      message_id: 'no-record',
      queue: 'copies',
      produced_at: at,
      enqueued_at: at,
      attempt: 1,
      entry: 1,
      payload: 'x',
    };
    // As if the producer crashed after its append (no record), then retried: two copies.
    await append('copies', [env]);
    await append('copies', [env]);
    expect(await drain('copies')).toEqual(['no-record']);
  });
});

describe('receive', () => {
  it('keeps an answer under its byte budget, delivering the rest to the next receive', async () => {
    const q = queueApi(t, 'big');
    const payload = 'b'.repeat(1_600_000);
    for (let i = 0; i < 4; i++) await q.produce([{ message_id: `big-${i}`, payload }]);
    await t.runtime.eventSource.drained(10_000);
    const first = await t.api('/queues/big/receive', { body: { max_messages: 10, wait_seconds: 2 } });
    expect(first.status).toBe(200);
    // 4 × 1.6 MB would be 6.4 MB, over a synchronous Lambda answer's 6 MB.
    expect(first.body.messages.length).toBeGreaterThanOrEqual(1);
    expect(first.body.messages.length).toBeLessThan(4);
    expect(JSON.stringify(first.body).length).toBeLessThan(6 * 1024 * 1024);
    const rest = await q.receiveAll(4 - first.body.messages.length, 10_000);
    expect([...first.body.messages, ...rest].map((m) => m.message_id).sort()).toEqual([
      'big-0',
      'big-1',
      'big-2',
      'big-3',
    ]);
  }, 60_000);

  it('answers without a message whose segment cannot be read, and leases nothing for it', async () => {
    const q = queueApi(t, 'lost');
    await q.produce([{ message_id: 'gone', payload: 1 }]);
    await t.runtime.eventSource.drained(10_000);
    const doc = t.runtime.clients.doc;
    const table = t.runtime.config.tableName;
    const segments = await doc.send(
      new ScanCommand({
        TableName: table,
        FilterExpression: 'begins_with(pk, :p)',
        ExpressionAttributeValues: { ':p': 'Q#lost#SEG#' },
      }),
    );
    expect(segments.Items).toHaveLength(1);
    const item = segments.Items?.[0] as { pk: string; sk: string };
    await doc.send(new DeleteCommand({ TableName: table, Key: { pk: item.pk, sk: item.sk } }));
    const res = await t.api('/queues/lost/receive', { body: { max_messages: 10 } });
    expect(res.status).toBe(200);
    expect(res.body.messages).toEqual([]);
    const stats = await q.stats();
    expect(stats.in_flight).toBe(0);
    expect(stats.depth).toBe(1);
  });

  it('of an ordered queue starts where its last look found every range finished, not below', async () => {
    const q = queueApi(t, 'lookpast');
    const config = t.runtime.config.tenant.queues.lookpast;
    if (!config) throw new Error('no queue lookpast');
    const services = buildServices(t.runtime.config, t.runtime.clients);
    const starts: (string | undefined)[] = [];
    const ranges = Object.assign(Object.create(services.ranges), {
      from: (...args: Parameters<typeof services.ranges.from>) => {
        starts.push(args[2]);
        return services.ranges.from(...args);
      },
    }) as typeof services.ranges;
    const look = new OrderedLook({ ...services, ranges });
    const shard = (await services.shards.shards(ownStreamName('layer', 'lookpast')))[0] as string;
    const once = async (n: number) => {
      await q.produce([{ key: `k${n}`, payload: n }]);
      const [m] = await q.receiveAll(1, 10_000);
      await q.ack([m?.receipt as string]);
    };
    // The look sees the first range unfinished; then it and three more are acked.
    await q.produce([{ key: 'k0', payload: 0 }]);
    await t.runtime.eventSource.drained(10_000);
    await look.runs('lookpast', config, shard, 10, Date.now());
    const [first] = await q.receiveAll(1, 10_000);
    await q.ack([first?.receipt as string]);
    for (let n = 1; n <= 3; n++) await once(n);
    const last = await services.ranges.head('lookpast', shard);
    // Reads them all, every one finished; the next look starts at the last.
    await look.runs('lookpast', config, shard, 10, Date.now());
    await look.runs('lookpast', config, shard, 10, Date.now());
    expect(starts.at(-1)).toBe(last?.start);
  });
  it('of an ordered queue reuses the blocked keys it read until an entry it reads failed for a key outside them', async () => {
    const q = queueApi(t, 'lookblock');
    const config = t.runtime.config.tenant.queues.lookblock;
    if (!config) throw new Error('no queue lookblock');
    const services = buildServices(t.runtime.config, t.runtime.clients);
    let reads = 0;
    const blocks = Object.assign(Object.create(services.blocks), {
      read: (...args: Parameters<typeof services.blocks.read>) => {
        reads++;
        return services.blocks.read(...args);
      },
    }) as typeof services.blocks;
    const look = new OrderedLook({ ...services, blocks });
    const shard = (await services.shards.shards(ownStreamName('layer', 'lookblock')))[0] as string;
    // a-0 in a range of its own, leased; a-1 in the next range waits behind it.
    await q.produce([{ message_id: 'a-0', key: 'a', payload: 0 }]);
    const [first] = await q.receiveAll(1, 10_000);
    await q.produce([{ message_id: 'a-1', key: 'a', payload: 1 }]);
    await t.runtime.eventSource.drained(10_000);
    const now = Date.now();
    await look.runs('lookblock', config, shard, 10, now);
    const again = await look.runs('lookblock', config, shard, 10, now + 10);
    expect(reads).toBe(1);
    expect(again.runs).toEqual([]);
    // Dead on its first attempt: the key is parked, and a-0's range is finished (failed).
    expect((await q.nack({ receipt: first?.receipt, retryable: false, error: 'bad' })).body.status).toBe(
      'dead_lettered',
    );
    const after = await look.runs('lookblock', config, shard, 10, now + 20);
    expect(reads).toBe(2);
    expect([...after.blocked.keys()]).toEqual(['a']);
    // Nothing failed since: reused until they are a second old.
    await look.runs('lookblock', config, shard, 10, now + 30);
    expect(reads).toBe(2);
    await look.runs('lookblock', config, shard, 10, now + 1030);
    expect(reads).toBe(3);
    // And a receive delivers nothing of the parked key.
    expect(await q.receiveAll(1, 1500)).toEqual([]);
  });
});

describe('the gap cap', () => {
  it('moves a slow lease out of its range so the shard keeps flowing, and its receipt still works', async () => {
    const q = queueApi(t, 'gap');
    await q.produce([{ message_id: 'slow', payload: 0 }]);
    const [slow] = await q.receiveAll(1, 10_000);
    expect(slow?.message_id).toBe('slow');
    const ids = Array.from({ length: 20 }, (_, i) => `fast-${i}`);
    await q.produce(ids.map((id) => ({ message_id: id, payload: id })));
    // A window of 6 behind a lease of 60 s: without the cap 5 of them would pass, then nothing.
    const seen = new Set<string>();
    const until = Date.now() + 20_000;
    while (seen.size < ids.length && Date.now() < until) {
      const got = await q.receive({ max_messages: 10, wait_seconds: 1 });
      for (const m of got) seen.add(m.message_id);
      if (got.length) await q.ack(got.map((m) => m.receipt));
    }
    expect(seen.size).toBe(ids.length);
    // The slow holder kept its lease: extend, then ack, with the receipt it was given.
    const extended = await q.extend({ receipt: slow?.receipt, lease_seconds: 30 });
    expect(extended.status).toBe(200);
    expect((await q.ack([slow?.receipt as string]))[0]?.status).toBe('acked');
    expect((await q.ack([slow?.receipt as string]))[0]?.status).toBe('acked');
    const trace = await t.api('/queues/gap/messages/slow');
    expect(trace.body.state).toBe('acked');
    expect(trace.body.attempts).toEqual([]);
    const stats = await q.stats();
    expect(stats.in_flight).toBe(0);
    expect(stats.depth).toBe(0);
  }, 60_000);

  it("moves an ordered queue's slow head out too, and its key stays closed until that lease's ack", async () => {
    const q = queueApi(t, 'gapkeyed');
    await q.produce([
      { message_id: 'slow-head', key: 'a', payload: 0 },
      { message_id: 'a-next', key: 'a', payload: 1 },
    ]);
    const [slow] = await q.receiveAll(1, 10_000);
    expect(slow?.message_id).toBe('slow-head');
    const ids = Array.from({ length: 20 }, (_, i) => `kf-${i}`);
    await q.produce(ids.map((id) => ({ message_id: id, key: id, payload: id })));
    const seen = new Set<string>();
    const until = Date.now() + 20_000;
    while (seen.size < ids.length && Date.now() < until) {
      const got = await q.receive({ max_messages: 10, wait_seconds: 1 });
      for (const m of got) seen.add(m.message_id);
      if (got.length) await q.ack(got.map((m) => m.receipt));
    }
    expect([...seen].sort()).toEqual([...ids].sort());
    expect((await q.ack([slow?.receipt as string]))[0]?.status).toBe('acked');
    const [next] = await q.receiveAll(1, 10_000);
    expect(next?.message_id).toBe('a-next');
    await q.ack([next?.receipt as string]);
    expect((await t.api('/queues/gapkeyed/messages/slow-head')).body.state).toBe('acked');
  }, 60_000);

  it('fails a moved lease that expires like any other, and a nack of one answers as usual', async () => {
    const q = queueApi(t, 'gap');
    await q.produce([{ message_id: 'slow-2', payload: 0 }]);
    const [slow] = await q.receiveAll(1, 10_000, { lease_seconds: 3 });
    await q.produce(Array.from({ length: 12 }, (_, i) => ({ message_id: `f2-${i}`, payload: i })));
    const seen = new Set<string>();
    const until = Date.now() + 20_000;
    while (seen.size < 12 && Date.now() < until) {
      const got = (await q.receive({ max_messages: 10, wait_seconds: 1 })).filter(
        (m) => m.message_id !== 'slow-2',
      );
      for (const m of got) seen.add(m.message_id);
      if (got.length) await q.ack(got.map((m) => m.receipt));
    }
    expect(seen.size).toBe(12);
    // Its lease ran out after the cap moved it: the sweep fails it, it comes back as attempt 2.
    const again = await q.receiveAll(1, 15_000);
    expect(again[0]?.message_id).toBe('slow-2');
    expect(again[0]?.attempt).toBe(2);
    expect((await q.nack({ receipt: slow?.receipt })).status).toBe(409);
    expect((await q.nack({ receipt: again[0]?.receipt, error: 'still slow' })).body.status).toBe(
      'retry_scheduled',
    );
    const trace = await t.api('/queues/gap/messages/slow-2');
    expect(trace.body.attempts.map((a: { reason: string }) => a.reason)).toEqual(['lease_expired', 'nack']);
  }, 60_000);
});

describe('the gap cap racing the holder', () => {
  const services = () => buildServices(t.runtime.config, t.runtime.clients);

  /** The sweep's view of a one-shard queue's only lease, as it reads it before moving it. */
  async function sweepView(queue: string) {
    const { ranges, segments } = services();
    const [range] = await ranges.from(queue, 'shardId-000000000000', undefined, 10, true);
    const [[index, lease] = []] = range?.leases ?? [];
    const entry = range && index !== undefined ? await segments.entryAt(queue, range, index) : undefined;
    if (!range || index === undefined || !lease || !entry) throw new Error('the lease is not in its range');
    return { queue, range, index, sequence: entry.sequence, envelope: entry.envelope, lease };
  }

  const evict = (target: Awaited<ReturnType<typeof sweepView>>) => {
    const config = t.runtime.config.tenant.queues[target.queue];
    if (!config) throw new Error(`no queue ${target.queue}`);
    return services().rangeFailures.evict(config, target, Date.now());
  };

  it('keeps an extend that lands between the sweep reading a lease and moving it', async () => {
    const q = queueApi(t, 'gaprace');
    await q.produce([{ message_id: 'racing', payload: 0 }]);
    const [held] = await q.receiveAll(1, 10_000, { lease_seconds: 2 });
    expect(held?.message_id).toBe('racing');
    const target = await sweepView('gaprace');
    expect(target.envelope.message_id).toBe('racing');
    expect((await q.extend({ receipt: held?.receipt, lease_seconds: 60 })).status).toBe(200);

    expect(await evict(target)).toBe(false);
    const after = await services().ranges.get('gaprace', 'shardId-000000000000', target.range.start);
    expect(after && entryStatus(after, target.index, Date.now())).toBe('leased');
    expect(after?.leases.get(target.index)?.expiresAt).toBeGreaterThan(Date.now() + 30_000);

    // Past the lease the sweep read: still the holder's, not delivered again.
    await new Promise((r) => setTimeout(r, 2500));
    expect(await q.receive({ max_messages: 10, wait_seconds: 1 })).toEqual([]);
    expect((await q.ack([held?.receipt as string]))[0]?.status).toBe('acked');
    const trace = await t.api('/queues/gaprace/messages/racing');
    expect(trace.body.state).toBe('acked');
    expect(trace.body.attempts).toEqual([]);
  }, 30_000);

  it("gives back an ordered key the move took when the holder's ack lands in its range first", async () => {
    const q = queueApi(t, 'gapracekeyed');
    await q.produce([
      { message_id: 'rk-head', key: 'a', payload: 0 },
      { message_id: 'rk-next', key: 'a', payload: 1 },
    ]);
    const [head] = await q.receiveAll(1, 10_000, { max_messages: 1 });
    expect(head?.message_id).toBe('rk-head');
    const target = await sweepView('gapracekeyed');
    expect((await q.ack([head?.receipt as string]))[0]?.status).toBe('acked');

    expect(await evict(target)).toBe(false);
    expect((await services().keys.getMany('gapracekeyed', ['a'])).get('a')?.busy_with).toBeUndefined();
    const [next] = await q.receiveAll(1, 10_000);
    expect(next?.message_id).toBe('rk-next');
    expect((await q.ack([next?.receipt as string]))[0]?.status).toBe('acked');
  }, 30_000);
});

/** Every record of a one-shard queue's stream, oldest first. */
async function records(queue: string): Promise<{ Data?: Uint8Array; PartitionKey?: string }[]> {
  const kinesis = t.runtime.clients.kinesis;
  const StreamName = ownStreamName('layer', queue);
  let iterator = (
    await kinesis.send(
      new GetShardIteratorCommand({
        StreamName,
        ShardId: 'shardId-000000000000',
        ShardIteratorType: 'TRIM_HORIZON',
      }),
    )
  ).ShardIterator;
  const out: { Data?: Uint8Array; PartitionKey?: string }[] = [];
  for (let page = 0; iterator && page < 20; page++) {
    const got = await kinesis.send(new GetRecordsCommand({ ShardIterator: iterator }));
    out.push(...(got.Records ?? []));
    if (!got.Records?.length) break;
    iterator = got.NextShardIterator;
  }
  return out;
}

describe('retries that wait in their ranges', () => {
  const stateItem = (queue: string, id: string) =>
    t.runtime.clients.doc
      .send(
        new GetCommand({
          TableName: t.runtime.config.tableName,
          Key: { pk: `Q#${queue}#M#${id}`, sk: 'S' },
          ConsistentRead: true,
        }),
      )
      .then((out) => out.Item);

  it('keeps a nack due within a lease in its range: no message item, its attempt kept, trace follows it', async () => {
    const q = queueApi(t, 'waits');
    await q.produce([{ message_id: 'w-1', payload: 'job' }]);
    const [first] = await q.receiveAll(1, 10_000);
    const nack = await q.nack({ receipt: first?.receipt, error: 'boom' });
    expect(nack.body.status).toBe('retry_scheduled');
    expect((await t.api('/queues/waits/stats')).body.delayed).toBe(1);
    expect(await stateItem('waits', 'w-1')).toBeUndefined();
    const waiting = await t.api('/queues/waits/messages/w-1');
    expect(waiting.body.state).toBe('delayed');
    expect(waiting.body.events.map((e: { event: string }) => e.event)).toContain('retry_due');
    // The nacked delivery's receipt is done with.
    expect((await q.ack([first?.receipt as string]))[0]?.status).toBe('stale_receipt');
    expect((await q.nack({ receipt: first?.receipt })).status).toBe(409);

    const [second] = await q.receiveAll(1, 10_000);
    expect(second).toMatchObject({ message_id: 'w-1', attempt: 2, payload: 'job' });
    const trace = await t.api('/queues/waits/messages/w-1');
    expect(trace.body.state).toBe('leased');
    expect(trace.body.attempts).toEqual([
      expect.objectContaining({ attempt: 1, reason: 'nack', error: 'boom' }),
    ]);
    expect(trace.body.events.filter((e: { event: string }) => e.event === 'enqueued')).toHaveLength(1);
    expect((await q.ack([second?.receipt as string]))[0]?.status).toBe('acked');
    expect((await t.api('/queues/waits/messages/w-1')).body.state).toBe('acked');
    expect(await stateItem('waits', 'w-1')).toBeUndefined();
  }, 30_000);

  it('admits one copy of a retry entry: another (the sweep appended it again) is passed over', async () => {
    const q = queueApi(t, 'waits');
    await q.produce([{ message_id: 'w-2', payload: 'job' }]);
    const [first] = await q.receiveAll(1, 10_000);
    await q.nack({ receipt: first?.receipt });
    const [second] = await q.receiveAll(1, 10_000);
    expect(second?.attempt).toBe(2);
    await q.ack([second?.receipt as string]);
    const copy = (await records('waits')).find((r) => {
      const env = JSON.parse(Buffer.from(r.Data ?? []).toString()) as Envelope;
      return env.message_id === 'w-2' && env.from !== undefined;
    });
    expect(copy).toBeDefined();
    await t.runtime.clients.kinesis.send(
      new PutRecordsCommand({
        StreamName: ownStreamName('layer', 'waits'),
        Records: [{ PartitionKey: copy?.PartitionKey ?? 'w-2', Data: copy?.Data }],
      }),
    );
    await t.runtime.eventSource.drained(10_000);
    expect(await drain('waits', 2500)).toEqual([]);
    expect((await t.api('/queues/waits/messages/w-2')).body.state).toBe('acked');
  }, 30_000);

  it('moves a waiting retry far below the head to the delay store, so the shard keeps flowing', async () => {
    const q = queueApi(t, 'waitgap');
    await q.produce([{ message_id: 'wg-slow', payload: 0 }]);
    const [slow] = await q.receiveAll(1, 10_000);
    expect((await q.nack({ receipt: slow?.receipt, retry_after_seconds: 12 })).body.status).toBe(
      'retry_scheduled',
    );
    await q.produce(Array.from({ length: 12 }, (_, i) => ({ message_id: `wg-${i}`, payload: i })));
    const seen = new Set<string>();
    const until = Date.now() + 10_000;
    while (seen.size < 12 && Date.now() < until) {
      const got = await q.receive({ max_messages: 10, wait_seconds: 1 });
      for (const m of got) seen.add(m.message_id);
      if (got.length) await q.ack(got.map((m) => m.receipt));
    }
    // A window of 6 with the waiting retry holding its commit point lets 5 through; the cap moved it.
    expect(seen.size).toBe(12);
    expect((await stateItem('waitgap', 'wg-slow'))?.state).toBe('delayed');
    const [again] = await q.receiveAll(1, 20_000);
    expect(again).toMatchObject({ message_id: 'wg-slow', attempt: 2 });
    await q.ack([again?.receipt as string]);
    const trace = await t.api('/queues/waitgap/messages/wg-slow');
    expect(trace.body.attempts.map((a: { reason: string }) => a.reason)).toEqual(['nack']);
  }, 60_000);
});
