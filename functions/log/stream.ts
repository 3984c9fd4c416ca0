import type {
  ListShardsCommandInput,
  ListShardsCommandOutput,
  PutRecordsCommandOutput,
  PutRecordsRequestEntry,
  Shard,
} from '@aws-sdk/client-kinesis';
import { type KinesisClient, ListShardsCommand, PutRecordsCommand } from '../aws/kinesis.js';
import { sleep } from '../core/async.js';
import type { ShardLink } from '../core/shard-lineage.js';

/**
 * Appends records to a queue's Kinesis stream. PutRecords is not atomic: each entry lands
 * or fails on its own, so failed entries are retried here a few times and then reported
 * per record, never as landed.
 */

export interface AppendInput {
  partitionKey: string;
  data: Uint8Array;
}

export type AppendResult =
  | { ok: true; shardId: string; sequenceNumber: string }
  | { ok: false; errorCode: string; errorMessage: string };

/** AWS limits for one PutRecords call. */
const MAX_RECORDS = 500;
const MAX_REQUEST_BYTES = 5 * 1024 * 1024;

export interface AppendOptions {
  /** Rounds of retry for entries that failed (throttled) inside one append. */
  retryRounds?: number;
  /**
   * Ordered queues: a failed entry is not retried when a later entry of the same key in
   * the same call already landed, since the retry would land it after that one.
   */
  preserveKeyOrder?: boolean;
}

export class StreamLog {
  constructor(private readonly kinesis: KinesisClient) {}

  async append(
    stream: string,
    inputs: readonly AppendInput[],
    options: AppendOptions = {},
  ): Promise<AppendResult[]> {
    const results = new Array<AppendResult>(inputs.length);
    for (const chunk of chunkIndexes(inputs)) {
      await this.appendChunk(stream, inputs, chunk, results, options);
    }
    return results;
  }

  private async appendChunk(
    stream: string,
    inputs: readonly AppendInput[],
    chunk: number[],
    results: AppendResult[],
    options: AppendOptions,
  ): Promise<void> {
    const rounds = options.retryRounds ?? 3;
    let pending = chunk;
    for (let round = 0; round <= rounds && pending.length > 0; round++) {
      if (round > 0) await sleep(50 * 2 ** round);
      const entries: PutRecordsRequestEntry[] = pending.map((i) => ({
        PartitionKey: (inputs[i] as AppendInput).partitionKey,
        Data: (inputs[i] as AppendInput).data,
      }));
      let out: PutRecordsCommandOutput;
      try {
        out = await this.kinesis.send(new PutRecordsCommand({ StreamName: stream, Records: entries }));
      } catch (err) {
        // The SDK already retried the call; every entry of it is failed (and retryable).
        const e = err as { name?: string; message?: string };
        for (const i of pending)
          results[i] = { ok: false, errorCode: e.name ?? 'Error', errorMessage: e.message ?? '' };
        return;
      }
      const failed: number[] = [];
      pending.forEach((inputIndex, k) => {
        const r = out.Records?.[k];
        if (r?.SequenceNumber && r.ShardId && !r.ErrorCode) {
          results[inputIndex] = { ok: true, shardId: r.ShardId, sequenceNumber: r.SequenceNumber };
        } else {
          results[inputIndex] = {
            ok: false,
            errorCode: r?.ErrorCode ?? 'InternalFailure',
            errorMessage: r?.ErrorMessage ?? 'no result for this record',
          };
          failed.push(inputIndex);
        }
      });
      pending = options.preserveKeyOrder
        ? failed.filter((i) => !landedLaterWithSameKey(i, inputs, chunk, results))
        : failed;
    }
  }
}

function landedLaterWithSameKey(
  index: number,
  inputs: readonly AppendInput[],
  chunk: readonly number[],
  results: readonly AppendResult[],
): boolean {
  const key = inputs[index]?.partitionKey;
  return chunk.some((j) => j > index && inputs[j]?.partitionKey === key && results[j]?.ok);
}

/** Splits input indexes into PutRecords-sized chunks (count and bytes). */
function chunkIndexes(inputs: readonly AppendInput[]): number[][] {
  const chunks: number[][] = [];
  let current: number[] = [];
  let bytes = 0;
  inputs.forEach((input, i) => {
    const size = input.data.byteLength + Buffer.byteLength(input.partitionKey);
    if (current.length === MAX_RECORDS || (current.length > 0 && bytes + size > MAX_REQUEST_BYTES)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(i);
    bytes += size;
  });
  if (current.length) chunks.push(current);
  return chunks;
}

/**
 * How long an instance uses a stream's shard listing. A reshard's children appear to receivers
 * and the sweep within this; a producer whose record lands on a shard it has not listed reads
 * the listing again at once (`learn`). ListShards is not billed.
 */
const SHARD_CACHE_MS = 10_000;

/** The shards of a stream, with their lineage, cached per instance (shards change only on resharding). */
export class ShardDirectory {
  private cache = new Map<string, { at: number; links: Promise<Map<string, ListedLink>> }>();

  constructor(
    private readonly kinesis: KinesisClient,
    private readonly cacheMs = SHARD_CACHE_MS,
  ) {}

  /** The ids of the shards the stream lists, open and closed, in the stream's order. */
  async shards(stream: string, now = Date.now()): Promise<string[]> {
    return [...(await this.lineage(stream, now)).values()].filter((l) => l.listed).map((l) => l.id);
  }

  /**
   * The stream's shards by id with their parents and whether they are closed; parents the stream
   * no longer lists are there too, closed, with no parents of their own (core/shard-lineage.ts).
   */
  lineage(stream: string, now = Date.now()): Promise<Map<string, ListedLink>> {
    const hit = this.cache.get(stream);
    if (hit && now - hit.at < this.cacheMs) return hit.links;
    const links = this.list(stream);
    this.cache.set(stream, { at: now, links });
    links.catch(() => this.cache.delete(stream));
    return links;
  }

  /** A record landed on `shard`: if the listing does not have it, the stream was resharded. */
  async learn(stream: string, shard: string): Promise<void> {
    const hit = this.cache.get(stream);
    if (hit && !(await hit.links.catch(() => undefined))?.has(shard)) this.cache.delete(stream);
  }

  /** Lists the stream again at the next call: a caller has a sign of a reshard the listing may miss. */
  forget(stream: string): void {
    this.cache.delete(stream);
  }

  private async list(stream: string): Promise<Map<string, ListedLink>> {
    const links = new Map<string, ListedLink>();
    for (const s of await listShards((input) => this.kinesis.send(new ListShardsCommand(input)), stream)) {
      if (!s.ShardId) continue;
      const parents = [s.ParentShardId, s.AdjacentParentShardId].filter((p): p is string => !!p);
      const closed = s.SequenceNumberRange?.EndingSequenceNumber !== undefined;
      links.set(s.ShardId, { id: s.ShardId, parents, closed, listed: true });
    }
    for (const link of [...links.values()])
      for (const parent of link.parents)
        if (!links.has(parent)) links.set(parent, { id: parent, parents: [], closed: true, listed: false });
    return links;
  }
}

/**
 * Every shard a stream lists, open and closed (until trimmed), page after page; `list` is one
 * ListShards call of whichever client the caller has.
 */
export async function listShards(
  list: (input: ListShardsCommandInput) => Promise<Pick<ListShardsCommandOutput, 'Shards' | 'NextToken'>>,
  stream: string,
): Promise<Shard[]> {
  const shards: Shard[] = [];
  let token: string | undefined;
  do {
    const out = await list(token ? { NextToken: token } : { StreamName: stream });
    shards.push(...(out.Shards ?? []));
    token = out.NextToken;
  } while (token);
  return shards;
}

/** A shard of the lineage, and whether the stream still lists it. */
export type ListedLink = ShardLink & { listed: boolean };
