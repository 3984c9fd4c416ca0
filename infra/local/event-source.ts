import type { _Record } from '@aws-sdk/client-kinesis';
import type {
  Context,
  KinesisStreamBatchResponse,
  KinesisStreamEvent,
  KinesisStreamRecord,
} from 'aws-lambda';
import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  type KinesisClient,
  ListShardsCommand,
} from '../../functions/aws/kinesis.js';
import { listShards } from '../../functions/log/stream.js';
import { CheckpointStore } from './checkpoints.js';
import { lambdaContext } from './lambda-context.js';

/**
 * The local stand-in for Lambda's Kinesis event source mapping (ParallelizationFactor 1):
 * one poller per shard, batches in shard order, one invocation at a time per shard, retries
 * and partial batch responses as Lambda handles them, and checkpoints on disk so a restart
 * resumes where the last successful batch ended (at-least-once, as on AWS).
 *
 * It follows resharding as Lambda does: each mapping lists its stream's shards again every
 * second (shardListIntervalMs) and whenever a shard reaches its end, and starts a poller for
 * each new one. A child shard (of a split or a merge) is not read until each parent still
 * listed has been read to its end and all of the parent's records are handled (or skipped
 * after the last retry), so a partition key's records reach the function in the order they
 * were put. A finished shard's poller stops and the checkpoint file remembers it, so a restart
 * neither reads it again nor holds its children back.
 */

export type KinesisHandler = (
  event: KinesisStreamEvent,
  context: Context,
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler that returns nothing must fit, as in Lambda's own types.
) => Promise<KinesisStreamBatchResponse | void>;

export interface EventSourceMapping {
  /** Names the mapping: the function's name; also names its checkpoint file. */
  functionName: string;
  streamName: string;
  handler: KinesisHandler;
  /** Default 100 (AWS: 1-10000). */
  batchSize?: number;
  /** Default 0: invoke as soon as records are read. */
  maximumBatchingWindowMs?: number;
  /** Default TRIM_HORIZON. LATEST means from the mapping's first start, as on AWS, not from each start. */
  startingPosition?: 'TRIM_HORIZON' | 'LATEST';
  /** Default true. */
  reportBatchItemFailures?: boolean;
  /** AWS default -1 (retry until the record expires); locally a number caps it, then the batch is skipped (and logged). */
  maximumRetryAttempts?: number;
  /** Default false. */
  bisectBatchOnFunctionError?: boolean;
  /** The function's timeout, where its context's remaining time starts. Default 30 s. */
  timeoutMs?: number;
  /**
   * On enhanced fan-out (AWS: a stream consumer that pushes records, ~70 ms after the put, outside
   * a shard's five reads a second). Locally the poller reads every FAN_OUT_POLL_MS with
   * `fanOutKinesis`, whose reads the emulator does not count against the shard's.
   */
  fanOut?: boolean;
}

export interface EventSourceOptions {
  kinesis: KinesisClient;
  /** What a fan-out mapping reads with (needed when one is). */
  fanOutKinesis?: KinesisClient;
  /** For eventSourceARN / awsRegion; default 'us-east-1'. */
  region?: string;
  mappings: EventSourceMapping[];
  /** Folder where checkpoints live (one JSON file per mapping, written atomically: tmp file + rename). */
  checkpointDir: string;
  /** How long a shard poller waits after an empty read. Default 100 ms. */
  idlePollMs?: number;
  /** Retry backoff after a failed invocation: starts here, doubles, capped at maxRetryBackoffMs. Defaults 100 / 2000. */
  retryBackoffMs?: number;
  maxRetryBackoffMs?: number;
  /**
   * How often each mapping lists its stream's shards to find those a split or a merge made.
   * Default 1000 ms, cheap against a local emulator. A shard reaching its end and drained() list them at once too.
   */
  shardListIntervalMs?: number;
  onError?: (err: unknown, info: ErrorInfo) => void;
}

/** shardId is absent when listing the stream's shards failed. */
export interface ErrorInfo {
  functionName: string;
  shardId?: string;
}

export interface EventSource {
  /** Wakes every idle poller now (the api calls this after a produce, so local latency is low). */
  nudge(): void;
  /** Creates a mapping while running (CreateEventSourceMapping): busy-time fan-out's, from the local FanOutSwitch. */
  map(mapping: EventSourceMapping): Promise<void>;
  /** Deletes a running mapping and its checkpoints (DeleteEventSourceMapping): mapped again, it starts anew. */
  unmap(functionName: string): Promise<void>;
  /** Whether a mapping of that name runs. */
  has(functionName: string): boolean;
  /**
   * Resolves when every shard of every mapping, including shards listed after this call, has
   * handed all records currently in the stream to its handler successfully, or has ended (for
   * tests and benchmarks). Rejects after timeoutMs.
   */
  drained(timeoutMs?: number): Promise<void>;
  /** Stops polling; waits for in-flight invocations to finish; checkpoints are already on disk. */
  stop(): Promise<void>;
}

/** Reported through onError when maximumRetryAttempts is exhausted and the batch is skipped. */
export class DiscardedBatchError extends Error {
  override readonly name = 'DiscardedBatchError';
  constructor(
    readonly firstSequenceNumber: string,
    readonly lastSequenceNumber: string,
    readonly records: number,
    cause: unknown,
  ) {
    super(`skipped ${records} records (${firstSequenceNumber}..${lastSequenceNumber}) after the last retry`, {
      cause,
    });
  }
}

const ACCOUNT = '000000000000';
const ROLE_ARN = `arn:aws:iam::${ACCOUNT}:role/leaseq-local`;
/** Lambda's synchronous invocation payload limit: a batch is cut short to fit, as the ESM does. */
const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024;
/** How often a fan-out mapping's poller reads an idle shard: the local stand-in for the push. */
export const FAN_OUT_POLL_MS = 50;

export async function startEventSource(options: EventSourceOptions): Promise<EventSource> {
  checkMappings(options.mappings);
  if (options.mappings.some((m) => m.fanOut) && !options.fanOutKinesis)
    throw new Error('a fan-out mapping needs fanOutKinesis');
  const region = options.region ?? 'us-east-1';
  const report =
    options.onError ??
    ((err, info) =>
      console.error(`[event-source] ${info.functionName}${info.shardId ? ` ${info.shardId}` : ''}:`, err));
  // Bumped by each drained() call and each read's or listing's start, so "this began after that call" is exact.
  let clock = 0;
  const watchers = new Set<{ check: () => void; fail: (err: Error) => void }>();
  const tick = () => ++clock;
  const progressed = () => {
    for (const w of watchers) w.check();
  };

  const open = async (mapping: EventSourceMapping) => {
    const store = await CheckpointStore.open(options.checkpointDir, mapping.functionName, mapping.streamName);
    const idlePollMs = options.idlePollMs ?? 100;
    const shards = new MappingShards({
      kinesis: (mapping.fanOut ? options.fanOutKinesis : undefined) ?? options.kinesis,
      mapping,
      store,
      eventSourceARN: `arn:aws:kinesis:${region}:${ACCOUNT}:stream/${mapping.streamName}`,
      region,
      idlePollMs: mapping.fanOut ? Math.min(idlePollMs, FAN_OUT_POLL_MS) : idlePollMs,
      retryBackoffMs: options.retryBackoffMs ?? 100,
      maxRetryBackoffMs: options.maxRetryBackoffMs ?? 2000,
      listIntervalMs: options.shardListIntervalMs ?? 1000,
      report,
      tick,
      progressed,
    });
    // The first listing is part of starting: a stream that cannot be listed fails the start.
    await shards.list();
    return { shards, store };
  };
  const opened = new Map(
    await Promise.all(options.mappings.map(async (m) => [m.functionName, await open(m)] as const)),
  );
  /** The running mappings' shards (a live view: busy-time mappings come and go). */
  const mappingShards = () => [...opened.values()].map((m) => m.shards);
  for (const m of mappingShards()) m.start();
  let stopped = false;

  return {
    nudge() {
      for (const m of mappingShards()) m.nudge();
    },
    async map(mapping) {
      if (opened.has(mapping.functionName))
        throw new Error(`two event source mappings are named ${mapping.functionName}`);
      checkMappings([mapping]);
      if (mapping.fanOut && !options.fanOutKinesis) throw new Error('a fan-out mapping needs fanOutKinesis');
      // A new mapping, as CreateEventSourceMapping makes: a file a stopped runtime left is not its.
      await CheckpointStore.discard(options.checkpointDir, mapping.functionName);
      const m = await open(mapping);
      opened.set(mapping.functionName, m);
      m.shards.start();
    },
    async unmap(functionName) {
      const m = opened.get(functionName);
      if (!m) return;
      opened.delete(functionName);
      await m.shards.stop();
      await m.store.remove();
    },
    has(functionName) {
      return opened.has(functionName);
    },
    drained(timeoutMs = 10_000) {
      if (stopped) return Promise.reject(new Error('event source is stopped'));
      const since = tick();
      return new Promise<void>((resolve, reject) => {
        const watcher = {
          check() {
            if (!mappingShards().every((m) => m.settledSince(since))) return;
            done();
            resolve();
          },
          fail(err: Error) {
            done();
            reject(err);
          },
        };
        const timer = setTimeout(
          () => watcher.fail(new Error(`event source not drained after ${timeoutMs} ms`)),
          timeoutMs,
        );
        const done = () => {
          clearTimeout(timer);
          watchers.delete(watcher);
        };
        watchers.add(watcher);
        // Shards made since the last listing count too; idle pollers read again now rather than after their idle wait.
        for (const m of mappingShards()) {
          m.relist();
          m.nudge();
        }
        watcher.check();
      });
    },
    async stop() {
      stopped = true;
      await Promise.all(mappingShards().map((m) => m.stop()));
      for (const w of watchers) w.fail(new Error('event source stopped'));
    },
  };
}

function checkMappings(mappings: EventSourceMapping[]): void {
  const names = new Set<string>();
  for (const m of mappings) {
    // Two mappings under one name would overwrite each other's checkpoint file.
    if (names.has(m.functionName)) throw new Error(`two event source mappings are named ${m.functionName}`);
    names.add(m.functionName);
    const batchSize = m.batchSize ?? 100;
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
      throw new Error(`${m.functionName}: batchSize must be 1-10000, got ${batchSize}`);
    }
    if ((m.maximumBatchingWindowMs ?? 0) < 0 || (m.maximumBatchingWindowMs ?? 0) > 300_000) {
      throw new Error(`${m.functionName}: maximumBatchingWindowMs must be 0-300000`);
    }
  }
}

interface MappingDeps {
  kinesis: KinesisClient;
  mapping: EventSourceMapping;
  store: CheckpointStore;
  eventSourceARN: string;
  region: string;
  idlePollMs: number;
  retryBackoffMs: number;
  maxRetryBackoffMs: number;
  listIntervalMs: number;
  report: (err: unknown, info: ErrorInfo) => void;
  tick: () => number;
  progressed: () => void;
}

/** The shards of one mapping's stream and their pollers: lists them, starts a poller per new shard, orders children after parents. */
class MappingShards {
  /** By shard id, every shard of the latest listing. */
  private readonly pollers = new Map<string, ShardPoller>();
  private readonly loops: Promise<void>[] = [];
  /** Clock value at the start of the latest listing that completed. */
  private listedAt = 0;
  private running = false;
  private stopping = false;
  private requested = false;
  private listLoop: Promise<void> | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly d: MappingDeps) {}

  /** Starts the pollers listed so far, and from now on those of shards listed later. */
  start(): void {
    this.running = true;
    for (const poller of this.pollers.values()) this.loops.push(poller.run());
    this.listLoop = this.loop();
  }

  async list(): Promise<void> {
    this.requested = false;
    const startedAt = this.d.tick();
    const shards = await listShards(
      (input) => this.d.kinesis.send(new ListShardsCommand(input)),
      this.d.mapping.streamName,
    );
    const listed = new Set<string>();
    const added: ShardPoller[] = [];
    for (const shard of shards) {
      const shardId = shard.ShardId as string;
      listed.add(shardId);
      if (this.pollers.has(shardId)) continue;
      const parents = [shard.ParentShardId, shard.AdjacentParentShardId].filter((p): p is string => !!p);
      const poller = new ShardPoller({
        ...this.d,
        shardId,
        // A parent no longer listed has been trimmed: nothing of it is left to come first.
        waitsForParent: () => parents.some((p) => this.pollers.get(p)?.ended === false),
        reachedEnd: () => this.relist(),
        ended: () => {
          this.nudge();
          this.d.progressed();
        },
      });
      this.pollers.set(shardId, poller);
      added.push(poller);
    }
    let trimmed = false;
    for (const [shardId, poller] of this.pollers) {
      if (listed.has(shardId)) continue;
      poller.stop();
      this.pollers.delete(shardId);
      trimmed = true;
    }
    if (trimmed) this.nudge();
    // Started once all are known: a child listed before its parent must still find it.
    if (this.running) for (const poller of added) this.loops.push(poller.run());
    this.listedAt = startedAt;
    this.d.progressed();
  }

  /** Lists the shards now rather than at the next interval. */
  relist(): void {
    this.requested = true;
    this.wake?.();
  }

  nudge(): void {
    for (const poller of this.pollers.values()) poller.nudge();
  }

  /** A listing began after `since`, and every listed shard has handled all it read since then, or has ended. */
  settledSince(since: number): boolean {
    if (this.listedAt <= since) return false;
    for (const poller of this.pollers.values()) if (!poller.ended && poller.idleAt <= since) return false;
    return true;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    // The listing in flight ends first, so no poller starts after the others were told to stop.
    await this.listLoop;
    for (const poller of this.pollers.values()) poller.stop();
    await Promise.all(this.loops);
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      if (!this.requested) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => this.wake?.(), this.d.listIntervalMs);
          this.wake = () => {
            clearTimeout(timer);
            this.wake = undefined;
            resolve();
          };
        });
      }
      if (this.stopping) return;
      try {
        await this.list();
      } catch (err) {
        // The pollers go on with the shards they have; the next interval lists again.
        this.d.report(err, { functionName: this.d.mapping.functionName });
      }
    }
  }
}

interface PollerDeps extends MappingDeps {
  shardId: string;
  /** A parent shard is still to be finished: this one must not be read yet. */
  waitsForParent: () => boolean;
  /** A read found the shard's end: its children may be new. */
  reachedEnd: () => void;
  /** The shard is finished, and that is on disk. */
  ended: () => void;
}

interface Pending {
  record: KinesisStreamRecord;
  /** Its share of the invocation payload. */
  bytes: number;
}

type Outcome = { ok: true } | { ok: false; error: unknown; failedAt?: number };

/** One shard of one mapping: read, invoke, checkpoint, strictly in order; after its parents, until its end. */
class ShardPoller {
  /** Clock value of the latest read that found nothing new with nothing pending: all before it is handled. */
  idleAt = 0;
  /** Closed, read to its end and every record handled (now or before a restart): it is not read again. */
  ended: boolean;
  private readonly batchSize: number;
  private readonly windowMs: number;
  private readonly maxRetries: number;
  /** Records read but not yet checkpointed, in shard order. */
  private readonly pending: Pending[] = [];
  private gatherStartedAt = 0;
  private iterator: string | undefined;
  /** The last read found nothing new: wait before the next one. */
  private emptyRead = false;
  /** A read answered no next iterator: the shard is closed and everything in it has been read. */
  private closed = false;
  /** Until the parents are finished; once they are, they stay so. */
  private waiting = true;
  /**
   * Sizes of the batches at the head of `pending` that failed and must be redelivered as they were,
   * in order: one entry per failed batch, or its two halves when bisecting (AWS's recursive split).
   */
  private readonly held: number[] = [];
  /** Failed invocations of the current head since it last advanced, toward maximumRetryAttempts. */
  private retries = 0;
  private invokeFailures = 0;
  private readFailures = 0;
  private stopping = false;
  private nudged = false;
  private wake: { resolve: () => void; onNudge: boolean } | undefined;

  constructor(private readonly d: PollerDeps) {
    this.batchSize = d.mapping.batchSize ?? 100;
    this.windowMs = d.mapping.maximumBatchingWindowMs ?? 0;
    const max = d.mapping.maximumRetryAttempts ?? -1;
    this.maxRetries = max < 0 ? Number.POSITIVE_INFINITY : max;
    this.ended = d.store.isEnded(d.shardId);
  }

  nudge(): void {
    this.nudged = true;
    if (this.wake?.onNudge) this.wake.resolve();
  }

  stop(): void {
    this.stopping = true;
    this.wake?.resolve();
  }

  async run(): Promise<void> {
    while (!this.stopping && !this.ended) {
      try {
        await this.step();
      } catch (err) {
        // An iterator lives 5 minutes: take a new one from where reading got to, at once.
        if ((err as Error).name === 'ExpiredIteratorException') {
          this.iterator = undefined;
          continue;
        }
        // Throttling, a network error or a failed checkpoint write: nothing moved, so retrying is safe.
        this.d.report(err, this.info());
        await this.sleep(this.backoff(++this.readFailures), false);
      }
    }
  }

  private async step(): Promise<void> {
    if (this.waiting) {
      // Cleared before the check: a parent that ends from here on nudges, and the wait below returns at once.
      this.nudged = false;
      if (this.d.waitsForParent()) return this.sleep(this.d.idlePollMs, true);
      this.waiting = false;
    }
    if (this.held.length === 0) await this.gather();
    if (this.stopping) return;
    const batch = this.nextBatch();
    if (batch.length > 0) await this.settle(batch, await this.invoke(batch));
    else if (this.closed) await this.end();
    else if (this.emptyRead) await this.sleep(this.d.idlePollMs, true);
  }

  /** Everything is read and handled: remembered on disk before the children may start. */
  private async end(): Promise<void> {
    await this.d.store.markEnded(this.d.shardId);
    this.ended = true;
    this.d.ended();
  }

  /** Reads until there is a batch: at once, or, with a batching window, until full or the window has passed. */
  private async gather(): Promise<void> {
    // A closed shard read to its end hands over what it holds without waiting for a window.
    if (this.pending.length >= this.batchSize || this.closed) return;
    await this.read();
    while (
      this.windowMs > 0 &&
      !this.closed &&
      this.pending.length > 0 &&
      this.pending.length < this.batchSize
    ) {
      const left = this.gatherStartedAt + this.windowMs - Date.now();
      if (left <= 0) return;
      await this.sleep(Math.min(this.d.idlePollMs, left), true);
      if (this.stopping) return;
      await this.read();
    }
  }

  private async read(): Promise<void> {
    this.iterator ??= await this.newIterator();
    this.nudged = false;
    const startedAt = this.d.tick();
    const out = await this.d.kinesis.send(
      new GetRecordsCommand({ ShardIterator: this.iterator, Limit: this.batchSize - this.pending.length }),
    );
    this.readFailures = 0;
    // A closed shard answers no next iterator once read past its end (AWS names the child shards
    // too; kinesalite does not, so the listing finds them).
    this.iterator = out.NextShardIterator;
    if (this.iterator === undefined) {
      this.closed = true;
      this.d.reachedEnd();
    }
    const records = out.Records ?? [];
    this.emptyRead = records.length === 0;
    if (this.emptyRead && this.pending.length === 0) {
      this.idleAt = startedAt;
      this.d.progressed();
      return;
    }
    // A LATEST mapping starts at its creation: records that arrived before it are passed over. A
    // shard made after it (a split's or a merge's child) is read from its start, as on AWS: all it
    // holds arrived later.
    const notBefore = this.d.mapping.startingPosition === 'LATEST' ? this.d.store.createdAt / 1000 : 0;
    const fresh = records
      .map((r) => this.toEventRecord(r))
      .filter((r) => r.kinesis.approximateArrivalTimestamp >= notBefore);
    const last = records.at(-1);
    if (fresh.length === 0 && this.pending.length === 0 && last) {
      await this.d.store.set(this.d.shardId, last.SequenceNumber as string);
      return;
    }
    if (this.pending.length === 0) this.gatherStartedAt = Date.now();
    for (const record of fresh) {
      this.pending.push({ record, bytes: Buffer.byteLength(JSON.stringify(record)) + 1 });
    }
  }

  /** After the last record read (kept in `pending`), else after the checkpoint, else the shard's start. */
  private async newIterator(): Promise<string> {
    const after = this.pending.at(-1)?.record.kinesis.sequenceNumber ?? this.d.store.get(this.d.shardId);
    const out = await this.d.kinesis.send(
      new GetShardIteratorCommand({
        StreamName: this.d.mapping.streamName,
        ShardId: this.d.shardId,
        ...(after
          ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', StartingSequenceNumber: after }
          : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
    );
    return out.ShardIterator as string;
  }

  /** The record as Lambda puts it in the event: base64 data, arrival in seconds with fractions. */
  private toEventRecord(r: _Record): KinesisStreamRecord {
    const sequenceNumber = r.SequenceNumber as string;
    return {
      kinesis: {
        kinesisSchemaVersion: '1.0',
        partitionKey: r.PartitionKey as string,
        sequenceNumber,
        data: Buffer.from(r.Data ?? new Uint8Array()).toString('base64'),
        approximateArrivalTimestamp: (r.ApproximateArrivalTimestamp?.getTime() ?? 0) / 1000,
      },
      eventSource: 'aws:kinesis',
      eventVersion: '1.0',
      eventID: `${this.d.shardId}:${sequenceNumber}`,
      eventName: 'aws:kinesis:record',
      invokeIdentityArn: ROLE_ARN,
      awsRegion: this.d.region,
      eventSourceARN: this.d.eventSourceARN,
    };
  }

  private nextBatch(): KinesisStreamRecord[] {
    const limit = this.held[0] ?? this.batchSize;
    const batch: KinesisStreamRecord[] = [];
    let bytes = 0;
    for (const p of this.pending) {
      if (batch.length >= limit || (batch.length > 0 && bytes + p.bytes > MAX_PAYLOAD_BYTES)) break;
      batch.push(p.record);
      bytes += p.bytes;
    }
    return batch;
  }

  private async invoke(batch: KinesisStreamRecord[]): Promise<Outcome> {
    let failures: unknown;
    try {
      const response = await this.d.mapping.handler(
        { Records: batch },
        lambdaContext(this.d.mapping.functionName, this.d.mapping.timeoutMs),
      );
      failures = response?.batchItemFailures;
    } catch (error) {
      return { ok: false, error };
    }
    // As on AWS, a missing or empty list is success, and a malformed one fails the whole batch.
    if (this.d.mapping.reportBatchItemFailures === false || failures == null) return { ok: true };
    if (!Array.isArray(failures)) return { ok: false, error: new Error('batchItemFailures is not a list') };
    // The batch is in sequence order, so the lowest failed index is the lowest failed sequence number.
    const index = new Map(batch.map((r, i) => [r.kinesis.sequenceNumber, i]));
    let failedAt: number | undefined;
    for (const failure of failures as Array<{ itemIdentifier?: unknown } | null>) {
      const i = index.get(String(failure?.itemIdentifier ?? ''));
      if (i === undefined) {
        return { ok: false, error: new Error(`unknown itemIdentifier in ${JSON.stringify(failure)}`) };
      }
      failedAt = Math.min(failedAt ?? i, i);
    }
    if (failedAt === undefined) return { ok: true };
    const sequenceNumber = batch[failedAt]?.kinesis.sequenceNumber;
    return { ok: false, error: new Error(`batch item failure at ${sequenceNumber}`), failedAt };
  }

  private async settle(batch: KinesisStreamRecord[], outcome: Outcome): Promise<void> {
    if (outcome.ok) {
      await this.commit(batch.length);
      this.retries = 0;
      this.invokeFailures = 0;
      return;
    }
    const { failedAt } = outcome;
    if (failedAt !== undefined) {
      // Partial batch response: keep what succeeded, retry from the failed record with a fresh batch.
      await this.commit(failedAt);
      this.held.length = 0;
      this.retries = failedAt > 0 ? 1 : this.retries + 1;
      // Progress restarts the backoff: a window that admits in steps is not a failing function.
      if (failedAt > 0) this.invokeFailures = 0;
    } else {
      // A split is not a retry on AWS: only a batch that cannot be split further counts toward the limit.
      const split = this.d.mapping.bisectBatchOnFunctionError === true && batch.length > 1;
      const half = Math.ceil(batch.length / 2);
      // The payload cap can make a batch shorter than its held entry: the rest stays held behind it.
      const rest = (this.held.shift() ?? batch.length) - batch.length;
      this.held.unshift(
        ...(split ? [half, batch.length - half] : [batch.length]),
        ...(rest > 0 ? [rest] : []),
      );
      if (!split) this.retries++;
    }
    if (this.retries > this.maxRetries) {
      const skipped = batch.slice(failedAt ?? 0);
      await this.commit(batch.length - (failedAt ?? 0));
      this.d.report(
        new DiscardedBatchError(
          skipped[0]?.kinesis.sequenceNumber ?? '',
          skipped.at(-1)?.kinesis.sequenceNumber ?? '',
          skipped.length,
          outcome.error,
        ),
        this.info(),
      );
      this.retries = 0;
      this.invokeFailures = 0;
      return;
    }
    await this.sleep(this.backoff(++this.invokeFailures), false);
  }

  /** Checkpoints the first `count` pending records, then drops them from memory. */
  private async commit(count: number): Promise<void> {
    const last = this.pending[count - 1];
    if (!last) return;
    await this.d.store.set(this.d.shardId, last.record.kinesis.sequenceNumber);
    this.pending.splice(0, count);
    const head = this.held[0];
    if (head !== undefined) {
      if (head > count) this.held[0] = head - count;
      else this.held.shift();
    }
  }

  private backoff(failures: number): number {
    return Math.min(this.d.maxRetryBackoffMs, this.d.retryBackoffMs * 2 ** (failures - 1));
  }

  /** Interrupted by stop(); an idle wait also by nudge(), including one that came during the last read. */
  private sleep(ms: number, onNudge: boolean): Promise<void> {
    if (this.stopping || (onNudge && this.nudged)) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wake?.resolve(), ms);
      this.wake = {
        onNudge,
        resolve: () => {
          clearTimeout(timer);
          this.wake = undefined;
          resolve();
        },
      };
    });
  }

  private info() {
    return { functionName: this.d.mapping.functionName, shardId: this.d.shardId };
  }
}
