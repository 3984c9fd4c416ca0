import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateStreamCommand,
  DescribeStreamSummaryCommand,
  MergeShardsCommand,
  SplitShardCommand,
} from '@aws-sdk/client-kinesis';
import type { Context, KinesisStreamBatchResponse, KinesisStreamRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsClients, createClients } from '../../functions/aws/clients.js';
import { FaultInjector } from '../../functions/aws/faults.js';
import { PutRecordsCommand } from '../../functions/aws/kinesis.js';
import { sleep } from '../../functions/core/async.js';
import { type AdminClients, createAdminClients } from '../../infra/local/admin-clients.js';
import { type Emulators, startEmulators } from '../../infra/local/emulators.js';
import {
  DiscardedBatchError,
  type EventSource,
  type EventSourceMapping,
  type EventSourceOptions,
  startEventSource,
} from '../../infra/local/event-source.js';

/**
 * The local event source mapping against kinesalite. The handlers are test functions that
 * record what they receive: the thing under test is the poller, not a Lambda.
 */

let emulators: Emulators;
let clients: AwsClients;
let admin: AdminClients;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'leaseq-esm-'));
  // Only Kinesis is under test here: the DynamoDB emulator does not matter.
  emulators = await startEmulators({ dataDir, shardLimit: 40, dynamodb: 'dynalite' });
  clients = createClients({ region: 'us-east-1', endpoints: emulators.endpoints });
  admin = createAdminClients(emulators.endpoints);
});
afterAll(async () => {
  clients?.destroy();
  admin?.destroy();
  await emulators?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Clients whose every call is one SDK attempt, so each fault injected reaches the poller. */
function oneAttemptClients(faults: FaultInjector): AwsClients {
  return createClients({ region: 'us-east-1', endpoints: emulators.endpoints, faults, maxAttempts: 1 });
}

/** Two shards by default; one where a test follows a single shard (kinesalite's limit is 40 open shards in all). */
async function createStream(name: string, shards = 2): Promise<string> {
  await admin.kinesis.send(new CreateStreamCommand({ StreamName: name, ShardCount: shards }));
  await waitActive(name);
  return name;
}

async function waitActive(name: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const out = await admin.kinesis.send(new DescribeStreamSummaryCommand({ StreamName: name }));
    if (out.StreamDescriptionSummary?.StreamStatus === 'ACTIVE') return;
    await sleep(20);
  }
  throw new Error(`stream ${name} did not become ACTIVE`);
}

/** Retried while the stream is UPDATING (briefly, after its creation or the last reshard, even with updateStreamMs 0), then waits until the new shards take records. */
async function reshard(stream: string, send: () => Promise<unknown>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await send();
      break;
    } catch (err) {
      if ((err as Error).name !== 'ResourceInUseException' || attempt >= 100) throw err;
      await sleep(20);
    }
  }
  await waitActive(stream);
}

/** Splits at the middle of the hash key range: the children take what `put` pins to 0 and to 1. */
const split = (stream: string, shardId: string) =>
  reshard(stream, () =>
    admin.kinesis.send(
      new SplitShardCommand({
        StreamName: stream,
        ShardToSplit: shardId,
        NewStartingHashKey: (2n ** 127n).toString(),
      }),
    ),
  );

const merge = (stream: string, shardId: string, adjacentShardId: string) =>
  reshard(stream, () =>
    admin.kinesis.send(
      new MergeShardsCommand({
        StreamName: stream,
        ShardToMerge: shardId,
        AdjacentShardToMerge: adjacentShardId,
      }),
    ),
  );

const shardName = (n: number) => `shardId-${String(n).padStart(12, '0')}`;

interface Put {
  shardId: string;
  sequenceNumber: string;
  data: string;
}

/** Puts `datas` in order; `shard` pins them to shard 0 or 1 (the hash range splits at 2^127). */
async function put(stream: string, datas: string[], shard?: 0 | 1): Promise<Put[]> {
  const out = await clients.kinesis.send(
    new PutRecordsCommand({
      StreamName: stream,
      Records: datas.map((data) => ({
        Data: Buffer.from(data),
        PartitionKey: data,
        ...(shard === undefined ? {} : { ExplicitHashKey: shard === 0 ? '0' : (2n ** 127n).toString() }),
      })),
    }),
  );
  expect(out.FailedRecordCount ?? 0).toBe(0);
  return (out.Records ?? []).map((r, i) => ({
    shardId: r.ShardId as string,
    sequenceNumber: r.SequenceNumber as string,
    data: datas[i] as string,
  }));
}

/** Puts `datas` in order under one partition key: one ordered sequence, on whichever shard holds the key. */
async function putKeyed(stream: string, key: string, datas: string[]): Promise<Put[]> {
  const out = await clients.kinesis.send(
    new PutRecordsCommand({
      StreamName: stream,
      Records: datas.map((data) => ({ Data: Buffer.from(data), PartitionKey: key })),
    }),
  );
  expect(out.FailedRecordCount ?? 0).toBe(0);
  return (out.Records ?? []).map((r, i) => ({
    shardId: r.ShardId as string,
    sequenceNumber: r.SequenceNumber as string,
    data: datas[i] as string,
  }));
}

interface Invocation {
  shardId: string;
  records: KinesisStreamRecord[];
  context: Context;
}

/** A handler that keeps every invocation; `respond` decides its answer (or throws), given the shard's call count. */
function recorder(
  respond: (call: Invocation, nthOfShard: number) => KinesisStreamBatchResponse | undefined = () => undefined,
) {
  const invocations: Invocation[] = [];
  const handler: EventSourceMapping['handler'] = async (event, context) => {
    const shardId = event.Records[0]?.eventID.split(':')[0] ?? '';
    const call = { shardId, records: event.Records, context };
    const nth = invocations.filter((i) => i.shardId === shardId).length;
    invocations.push(call);
    return respond(call, nth);
  };
  return { invocations, handler };
}

const decode = (r: KinesisStreamRecord) => Buffer.from(r.kinesis.data, 'base64').toString();
const datas = (calls: Invocation[]) => calls.flatMap((c) => c.records.map(decode));
const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
/** Where the invocations of these shards came in the order the handler was called. */
const positions = (calls: Invocation[], shardIds: string[]) =>
  calls.flatMap((c, i) => (shardIds.includes(c.shardId) ? [i] : []));
/** Every invocation of `children` came after every invocation of `parents`, and each group had some. */
function expectAfter(calls: Invocation[], parents: string[], children: string[]): void {
  const before = positions(calls, parents);
  const after = positions(calls, children);
  expect(before.length).toBeGreaterThan(0);
  expect(after.length).toBeGreaterThan(0);
  expect(Math.min(...after)).toBeGreaterThan(Math.max(...before));
}
/** The handler, a little slow: a parent still has batches to go when its children could start. */
const slow =
  (handler: EventSourceMapping['handler']): EventSourceMapping['handler'] =>
  (event, context) =>
    sleep(5).then(() => handler(event, context));

function start(
  mapping: Omit<EventSourceMapping, 'functionName'> & { functionName?: string },
  options: Partial<EventSourceOptions> = {},
): Promise<EventSource> {
  return startEventSource({
    kinesis: clients.kinesis,
    checkpointDir: mkdtempSync(join(dataDir, 'checkpoints-')),
    idlePollMs: 20,
    retryBackoffMs: 10,
    maxRetryBackoffMs: 40,
    ...options,
    mappings: [{ functionName: 'fn', ...mapping }],
  });
}

describe('delivery', () => {
  it('hands every record of both shards over once, in shard order, in batches up to batchSize, shaped as AWS does', async () => {
    const stream = await createStream('deliver');
    const puts = await put(stream, names('d', 60));
    expect(new Set(puts.map((p) => p.shardId)).size).toBe(2);
    const { invocations, handler } = recorder();
    const es = await start({ functionName: 'deliver-fn', streamName: stream, handler, batchSize: 7 });
    await es.drained();
    await es.stop();

    expect(datas(invocations).sort()).toEqual(names('d', 60).sort());
    for (const call of invocations) {
      expect(call.records.length).toBeLessThanOrEqual(7);
      expect(call.records.every((r) => r.eventID.startsWith(`${call.shardId}:`))).toBe(true);
      expect(call.context.functionName).toBe('deliver-fn');
    }
    for (const shardId of new Set(puts.map((p) => p.shardId))) {
      const delivered = invocations
        .filter((c) => c.shardId === shardId)
        .flatMap((c) => c.records.map((r) => r.kinesis.sequenceNumber));
      expect(delivered).toEqual(puts.filter((p) => p.shardId === shardId).map((p) => p.sequenceNumber));
    }

    const first = puts[0] as Put;
    const record = invocations.flatMap((c) => c.records).find((r) => decode(r) === first.data);
    expect(record).toEqual({
      kinesis: {
        kinesisSchemaVersion: '1.0',
        partitionKey: first.data,
        sequenceNumber: first.sequenceNumber,
        data: Buffer.from(first.data).toString('base64'),
        approximateArrivalTimestamp: expect.any(Number),
      },
      eventSource: 'aws:kinesis',
      eventVersion: '1.0',
      eventID: `${first.shardId}:${first.sequenceNumber}`,
      eventName: 'aws:kinesis:record',
      invokeIdentityArn: 'arn:aws:iam::000000000000:role/leaseq-local',
      awsRegion: 'us-east-1',
      eventSourceARN: 'arn:aws:kinesis:us-east-1:000000000000:stream/deliver',
    });
    // Seconds since the epoch, with the milliseconds as a fraction.
    expect(Math.abs((record?.kinesis.approximateArrivalTimestamp ?? 0) - Date.now() / 1000)).toBeLessThan(60);
  });

  it('gathers records produced during maximumBatchingWindowMs into fewer invocations', async () => {
    const stream = await createStream('window', 1);
    const { invocations, handler } = recorder();
    const es = await start({ streamName: stream, handler, maximumBatchingWindowMs: 500 });
    for (const name of names('w', 10)) {
      await put(stream, [name]);
      await sleep(15);
    }
    await es.drained();
    await es.stop();
    expect(datas(invocations)).toEqual(names('w', 10));
    expect(invocations.length).toBeLessThan(10);
  });
});

describe('failures', () => {
  it('gives a throwing handler the same batch again, then moves on once it succeeds', async () => {
    const stream = await createStream('retry');
    await put(stream, names('a', 10), 0);
    await put(stream, names('b', 10), 1);
    const handled: string[] = [];
    const { invocations, handler } = recorder((call, nth) => {
      if (nth < 2) throw new Error('not yet');
      handled.push(...call.records.map(decode));
      return undefined;
    });
    const es = await start({ streamName: stream, handler });
    await es.drained();
    await put(stream, names('c', 3), 0);
    await es.drained();
    await es.stop();

    const batches = (shardId: string) =>
      invocations.filter((c) => c.shardId === shardId).map((c) => c.records.map(decode));
    expect(batches('shardId-000000000000')).toEqual([
      names('a', 10),
      names('a', 10),
      names('a', 10),
      names('c', 3),
    ]);
    expect(batches('shardId-000000000001')).toEqual([names('b', 10), names('b', 10), names('b', 10)]);
    expect(handled.sort()).toEqual([...names('a', 10), ...names('b', 10), ...names('c', 3)].sort());
  });

  it('checkpoints the records before the first batch item failure and retries from it', async () => {
    const stream = await createStream('partial', 1);
    const puts = await put(stream, names('p', 8));
    const dir = mkdtempSync(join(dataDir, 'checkpoints-'));
    const checkpointAtCall: (string | undefined)[] = [];
    const { invocations, handler } = recorder((call, nth) => {
      checkpointAtCall.push(readCheckpoint(dir, 'partial-fn', call.shardId));
      const third = call.records[2];
      return nth === 0 && third
        ? { batchItemFailures: [{ itemIdentifier: third.kinesis.sequenceNumber }] }
        : undefined;
    });
    const es = await start(
      { functionName: 'partial-fn', streamName: stream, handler, batchSize: 5 },
      { checkpointDir: dir },
    );
    await es.drained();
    await es.stop();

    const seq = (i: number) => puts[i]?.sequenceNumber;
    expect(invocations.map((c) => c.records.map(decode))).toEqual([
      ['p-0', 'p-1', 'p-2', 'p-3', 'p-4'],
      ['p-2', 'p-3', 'p-4', 'p-5', 'p-6'],
      ['p-7'],
    ]);
    expect(checkpointAtCall).toEqual([undefined, seq(1), seq(6)]);
    expect(readCheckpoint(dir, 'partial-fn', 'shardId-000000000000')).toBe(seq(7));
  });

  it('treats an unknown itemIdentifier as a failure of the whole batch', async () => {
    const stream = await createStream('unknown-id', 1);
    await put(stream, names('u', 3));
    const { invocations, handler } = recorder((_call, nth) =>
      nth === 0 ? { batchItemFailures: [{ itemIdentifier: '' }] } : undefined,
    );
    const es = await start({ streamName: stream, handler });
    await es.drained();
    await es.stop();
    expect(invocations.map((c) => c.records.map(decode))).toEqual([names('u', 3), names('u', 3)]);
  });

  it('bisects a failing batch down to the poison record, and skips it once its retries are spent', async () => {
    const stream = await createStream('bisect', 1);
    await put(stream, names('x', 8));
    const errors: unknown[] = [];
    const { invocations, handler } = recorder((call) => {
      if (call.records.some((r) => decode(r) === 'x-5')) throw new Error('poison');
      return undefined;
    });
    const es = await start(
      { streamName: stream, handler, bisectBatchOnFunctionError: true, maximumRetryAttempts: 1 },
      { onError: (err) => errors.push(err) },
    );
    await es.drained();
    await es.stop();

    expect(invocations.map((c) => c.records.map(decode))).toEqual([
      names('x', 8),
      ['x-0', 'x-1', 'x-2', 'x-3'],
      ['x-4', 'x-5', 'x-6', 'x-7'],
      ['x-4', 'x-5'],
      ['x-4'],
      ['x-5'],
      ['x-5'],
      ['x-6', 'x-7'],
    ]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(DiscardedBatchError);
    expect(errors[0]).toMatchObject({ records: 1, cause: { message: 'poison' } });
  });

  it('backs off and keeps polling through GetRecords throttling', async () => {
    const stream = await createStream('throttled');
    const faults = new FaultInjector();
    // One SDK attempt per call, so each injected fault reaches the poller.
    const throttled = oneAttemptClients(faults);
    faults.callFault = {
      match: (op) => op === 'Kinesis.GetRecords',
      errorName: 'ProvisionedThroughputExceededException',
      throttling: true,
    };
    const errors: unknown[] = [];
    const { invocations, handler } = recorder();
    try {
      const es = await start(
        { streamName: stream, handler },
        { kinesis: throttled.kinesis, onError: (err) => errors.push(err) },
      );
      await put(stream, names('t', 6));
      await sleep(150);
      faults.clear();
      await es.drained();
      await es.stop();
    } finally {
      throttled.destroy();
    }
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => (e as Error).name === 'ProvisionedThroughputExceededException')).toBe(true);
    expect(datas(invocations).sort()).toEqual(names('t', 6).sort());
  });
});

describe('checkpoints and lifecycle', () => {
  it('resumes after stop on the same checkpointDir with nothing lost and nothing redelivered', async () => {
    const stream = await createStream('resume', 1);
    await put(stream, names('r', 10));
    const dir = mkdtempSync(join(dataDir, 'checkpoints-'));
    const mapping = { functionName: 'resume-fn', streamName: stream, batchSize: 2 };
    let first: EventSource | undefined;
    let stopped: Promise<void> | undefined;
    const before = recorder((_call, nth) => {
      // Stop while the third batch is in flight: stop() waits for it, and it is checkpointed.
      if (nth === 2) stopped = first?.stop();
      return undefined;
    });
    first = await start({ ...mapping, handler: before.handler }, { checkpointDir: dir });
    // (A promise returned to expect.poll would be awaited, hence the boolean.)
    await expect.poll(() => stopped !== undefined).toBe(true);
    await stopped;
    await put(stream, names('s', 3));

    const after = recorder();
    const second = await start({ ...mapping, handler: after.handler }, { checkpointDir: dir });
    await second.drained();
    await second.stop();

    expect(datas(before.invocations)).toEqual(names('r', 6));
    expect(datas(after.invocations)).toEqual([...names('r', 10).slice(6), ...names('s', 3)]);
  });

  it('resumes from a checkpoint file written before shards could end', async () => {
    const stream = await createStream('old-file', 1);
    const puts = await put(stream, names('o', 5));
    const dir = mkdtempSync(join(dataDir, 'checkpoints-'));
    writeFileSync(
      join(dir, 'old-file-fn.json'),
      JSON.stringify({
        streamName: stream,
        createdAt: Date.now(),
        shards: { [shardName(0)]: puts[1]?.sequenceNumber },
      }),
    );
    const { invocations, handler } = recorder();
    const es = await start(
      { functionName: 'old-file-fn', streamName: stream, handler },
      { checkpointDir: dir },
    );
    await es.drained();
    await es.stop();
    expect(datas(invocations)).toEqual(names('o', 5).slice(2));
  });

  it('starts a LATEST mapping at its first start, and keeps that position across restarts', async () => {
    const stream = await createStream('latest');
    await put(stream, names('old', 3));
    const dir = mkdtempSync(join(dataDir, 'checkpoints-'));
    const mapping = { functionName: 'latest-fn', streamName: stream, startingPosition: 'LATEST' as const };
    const first = recorder();
    let es = await start({ ...mapping, handler: first.handler }, { checkpointDir: dir });
    await es.drained();
    await es.stop();
    await put(stream, names('new', 4));

    const second = recorder();
    es = await start({ ...mapping, handler: second.handler }, { checkpointDir: dir });
    await es.drained();
    await es.stop();
    expect(first.invocations).toEqual([]);
    expect(datas(second.invocations).sort()).toEqual(names('new', 4));
  });

  it('nudge() wakes an idle poller at once, and stop() cuts its idle wait short', async () => {
    const stream = await createStream('nudge', 1);
    const { invocations, handler } = recorder();
    const es = await start({ streamName: stream, handler }, { idlePollMs: 60_000 });
    await es.drained();
    await put(stream, ['nudged']);
    es.nudge();
    await expect.poll(() => invocations.length, { timeout: 2000 }).toBe(1);
    const stopping = Date.now();
    await es.stop();
    expect(Date.now() - stopping).toBeLessThan(1000);
  });

  it('drained() resolves once every record is handled, and rejects while a shard is stuck', async () => {
    const stream = await createStream('drain');
    await put(stream, names('n', 30));
    const { invocations, handler } = recorder();
    const es = await start({
      streamName: stream,
      handler: (e, c) => sleep(5).then(() => handler(e, c)),
      batchSize: 4,
    });
    await es.drained();
    expect(datas(invocations)).toHaveLength(30);
    await es.stop();

    const stuck = await start({
      streamName: stream,
      handler: async () => {
        throw new Error('always');
      },
    });
    await expect(stuck.drained(300)).rejects.toThrow(/not drained/);
    await stuck.stop();
  });
});

describe('resharding', () => {
  it('finds the children of a split while running and hands a key over once each, in put order, the children after the parent', async () => {
    const stream = await createStream('split', 1);
    const { invocations, handler } = recorder();
    // The parent's first batch waits until its children hold records and have been listed, so they could start early.
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const es = await start(
      {
        streamName: stream,
        handler: (event, context) =>
          (event.Records[0]?.eventID.startsWith(shardName(0)) ? released : Promise.resolve()).then(() =>
            handler(event, context),
          ),
        batchSize: 3,
      },
      { shardListIntervalMs: 20 },
    );
    const onParent = await putKeyed(stream, 'key', names('a', 12));
    await split(stream, shardName(0));
    const onChild = await putKeyed(stream, 'key', names('b', 12));
    const others = [...(await put(stream, names('c', 4), 0)), ...(await put(stream, names('d', 4), 1))];
    await sleep(200);
    release();
    expect(new Set(onParent.map((p) => p.shardId))).toEqual(new Set([shardName(0)]));
    expect(new Set([...onChild, ...others].map((p) => p.shardId))).toEqual(
      new Set([shardName(1), shardName(2)]),
    );

    // No drained() here: it lists the shards itself, and the children must be found without it.
    const total = onParent.length + onChild.length + others.length;
    await expect.poll(() => datas(invocations).length, { timeout: 10_000 }).toBe(total);
    await es.drained();
    await es.stop();

    const delivered = datas(invocations);
    expect([...delivered].sort()).toEqual(
      [...names('a', 12), ...names('b', 12), ...names('c', 4), ...names('d', 4)].sort(),
    );
    expect(delivered.filter((d) => /^[ab]-/.test(d))).toEqual([...names('a', 12), ...names('b', 12)]);
    expectAfter(invocations, [shardName(0)], [shardName(1), shardName(2)]);
  });

  it("holds the children back while the parent's last batch fails, until it succeeds", async () => {
    const stream = await createStream('split-retry', 1);
    const onParent = await putKeyed(stream, 'key', names('p', 5));
    await split(stream, shardName(0));
    await putKeyed(stream, 'key', names('q', 5));
    await put(stream, names('r', 3), 0);
    await put(stream, names('s', 3), 1);
    const last = onParent.at(-1)?.sequenceNumber as string;
    let failures = 0;
    const { invocations, handler } = recorder((call) =>
      call.records.some((r) => r.kinesis.sequenceNumber === last) && failures++ < 3
        ? { batchItemFailures: [{ itemIdentifier: last }] }
        : undefined,
    );
    const es = await start({ streamName: stream, handler: slow(handler), batchSize: 2 });
    await es.drained();
    await es.stop();

    const offersOfLast = positions(invocations, [shardName(0)]).filter((i) =>
      invocations[i]?.records.some((r) => r.kinesis.sequenceNumber === last),
    );
    expect(offersOfLast).toHaveLength(4);
    expectAfter(invocations, [shardName(0)], [shardName(1), shardName(2)]);
    const children = invocations.filter((c) => c.shardId !== shardName(0));
    expect(datas(children).sort()).toEqual([...names('q', 5), ...names('r', 3), ...names('s', 3)].sort());
  });

  it("lets the children go once the parent's last batch is skipped after the last retry", async () => {
    const stream = await createStream('split-skip', 1);
    const onParent = await put(stream, names('p', 4));
    await split(stream, shardName(0));
    await put(stream, names('q', 2), 0);
    await put(stream, names('r', 2), 1);
    const last = onParent.at(-1)?.sequenceNumber as string;
    const errors: unknown[] = [];
    const { invocations, handler } = recorder((call) => {
      if (call.records.some((r) => r.kinesis.sequenceNumber === last)) throw new Error('poison');
      return undefined;
    });
    const es = await start(
      { streamName: stream, handler, batchSize: 2, maximumRetryAttempts: 2 },
      { onError: (err) => errors.push(err) },
    );
    await es.drained();
    await es.stop();

    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(DiscardedBatchError);
    expect(invocations.filter((c) => c.shardId === shardName(0)).map((c) => c.records.map(decode))).toEqual([
      ['p-0', 'p-1'],
      ['p-2', 'p-3'],
      ['p-2', 'p-3'],
      ['p-2', 'p-3'],
    ]);
    expectAfter(invocations, [shardName(0)], [shardName(1), shardName(2)]);
    expect(datas(invocations.filter((c) => c.shardId !== shardName(0))).sort()).toEqual(
      [...names('q', 2), ...names('r', 2)].sort(),
    );
  });

  it('hands over both parents of a merge before the merged child', async () => {
    const stream = await createStream('merge', 2);
    await put(stream, names('m0', 6), 0);
    await put(stream, names('m1', 6), 1);
    await merge(stream, shardName(0), shardName(1));
    const onChild = await put(stream, names('m2', 6));
    expect(new Set(onChild.map((p) => p.shardId))).toEqual(new Set([shardName(2)]));
    const { invocations, handler } = recorder();
    const es = await start({ streamName: stream, handler: slow(handler), batchSize: 2 });
    await es.drained();
    await es.stop();

    expect(datas(invocations).sort()).toEqual(
      [...names('m0', 6), ...names('m1', 6), ...names('m2', 6)].sort(),
    );
    expectAfter(invocations, [shardName(0), shardName(1)], [shardName(2)]);
    expect(datas(invocations.filter((c) => c.shardId === shardName(2)))).toEqual(onChild.map((p) => p.data));
  });

  it('reads a child made after a LATEST mapping started from its beginning', async () => {
    const stream = await createStream('split-latest', 1);
    await put(stream, names('old', 3));
    const { invocations, handler } = recorder();
    const es = await start({ streamName: stream, handler, startingPosition: 'LATEST' });
    await es.drained();
    await put(stream, names('new', 3));
    await split(stream, shardName(0));
    // Put before the children are read (they wait for their parent), so a child read from LATEST would miss them.
    await put(stream, names('child', 2), 0);
    await put(stream, names('kid', 2), 1);
    await es.drained();
    await es.stop();
    expect(datas(invocations).sort()).toEqual(
      [...names('new', 3), ...names('child', 2), ...names('kid', 2)].sort(),
    );
  });

  it('after a restart, reads no ended parent again and resumes the children from their checkpoints', async () => {
    const stream = await createStream('split-restart', 1);
    await put(stream, names('r', 4));
    await split(stream, shardName(0));
    const onChildren = [...(await put(stream, names('s', 6), 0)), ...(await put(stream, names('t', 6), 1))];
    const dir = mkdtempSync(join(dataDir, 'checkpoints-'));
    const mapping = { functionName: 'split-restart-fn', streamName: stream, batchSize: 2 };
    let first: EventSource | undefined;
    let stopped: Promise<void> | undefined;
    const before = recorder((call) => {
      // Stop while a child's first batch is in flight: the parent has ended and the children have started.
      if (call.shardId !== shardName(0)) stopped ??= first?.stop();
      return undefined;
    });
    first = await start({ ...mapping, handler: before.handler }, { checkpointDir: dir });
    await expect.poll(() => stopped !== undefined).toBe(true);
    await stopped;
    expect(datas(before.invocations.filter((c) => c.shardId === shardName(0)))).toEqual(names('r', 4));
    expect(JSON.parse(readFileSync(join(dir, 'split-restart-fn.json'), 'utf8')).ended).toEqual([
      shardName(0),
    ]);

    // The parent cannot be read now: were it read again, it would never end and hold the children back.
    const faults = new FaultInjector();
    const guarded = oneAttemptClients(faults);
    faults.callFault = {
      match: (op, input) =>
        op === 'Kinesis.GetShardIterator' && (input as { ShardId?: string }).ShardId === shardName(0),
      errorName: 'InternalFailure',
    };
    const errors: unknown[] = [];
    const after = recorder();
    try {
      const second = await start(
        { ...mapping, handler: after.handler },
        { kinesis: guarded.kinesis, checkpointDir: dir, onError: (err) => errors.push(err) },
      );
      await second.drained();
      await second.stop();
    } finally {
      guarded.destroy();
    }
    expect(errors).toEqual([]);
    expect(after.invocations.filter((c) => c.shardId === shardName(0))).toEqual([]);
    for (const child of [shardName(1), shardName(2)]) {
      const handled = [...before.invocations, ...after.invocations]
        .filter((c) => c.shardId === child)
        .flatMap((c) => c.records.map((r) => r.kinesis.sequenceNumber));
      expect(handled).toEqual(onChildren.filter((p) => p.shardId === child).map((p) => p.sequenceNumber));
    }
    // Something was left for the second start to resume.
    expect(datas(after.invocations).length).toBeGreaterThan(0);
  });
});

function readCheckpoint(dir: string, functionName: string, shardId: string): string | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, `${functionName}.json`), 'utf8')).shards[shardId];
  } catch {
    return undefined;
  }
}
