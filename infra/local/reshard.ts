import {
  DescribeStreamSummaryCommand,
  type KinesisClient,
  ListShardsCommand,
  MergeShardsCommand,
  SplitShardCommand,
} from '@aws-sdk/client-kinesis';
import { sleep } from '../../functions/core/async.js';
import {
  type HashRange,
  type PlanOptions,
  planSplitsAndMerges,
  type ReshardStep,
} from '../../functions/core/reshard-plan.js';
import { listShards } from '../../functions/log/stream.js';

/**
 * Reshards a local stream to a shard count with SplitShard and MergeShards, the calls kinesalite
 * has (on AWS the stack's ShardCount does it, through UpdateShardCount). Steps run one at a time:
 * each leaves the stream UPDATING, and the next is refused until it is ACTIVE again.
 */

export interface OpenShard extends HashRange {
  id: string;
}

/** A step as carried out: the plan's step and the ids of the shards it closed. */
export type ReshardedStep = ReshardStep & { shardIds: string[] };

export interface ReshardResult {
  stream: string;
  /** Open shards before and after. */
  before: number;
  after: number;
  steps: ReshardedStep[];
}

/** Waits between polls of the stream's status, and how long it may stay out of ACTIVE. */
const POLL = { firstMs: 20, maxMs: 1000, deadlineMs: 120_000 };
/** A refused call (stream busy, too many calls a second, a full emulator) is tried this often. */
const CALL_ATTEMPTS = 10;
const RETRYABLE = new Set(['ResourceInUseException', 'LimitExceededException']);

export async function reshardStream(
  kinesis: KinesisClient,
  stream: string,
  target: number,
  options: PlanOptions = {},
): Promise<ReshardResult> {
  await waitActive(kinesis, stream);
  let open = await listOpenShards(kinesis, stream);
  const before = open.length;
  const plan = planSplitsAndMerges(open, target, options);
  const steps: ReshardedStep[] = [];
  for (const step of plan) {
    const id = (start: bigint) => {
      const shard = open.find((s) => s.start === start);
      if (!shard)
        throw new Error(
          `stream ${stream}: no open shard starts at hash key ${start}; it changed while resharding`,
        );
      return shard.id;
    };
    const shardIds = step.kind === 'split' ? [id(step.start)] : [id(step.left), id(step.right)];
    const [first, second] = shardIds as [string, string];
    await withRetries(stream, async () => {
      if (step.kind === 'split')
        await kinesis.send(
          new SplitShardCommand({
            StreamName: stream,
            ShardToSplit: first,
            NewStartingHashKey: `${step.at}`,
          }),
        );
      else
        await kinesis.send(
          new MergeShardsCommand({ StreamName: stream, ShardToMerge: first, AdjacentShardToMerge: second }),
        );
    });
    steps.push({ ...step, shardIds });
    await waitActive(kinesis, stream);
    // The children's ids exist only now.
    open = await listOpenShards(kinesis, stream);
  }
  if (open.length !== target)
    throw new Error(`stream ${stream} has ${open.length} open shards after resharding to ${target}`);
  return { stream, before, after: open.length, steps };
}

/** The stream's open shards (those with no ending sequence number), in hash key order. */
export async function listOpenShards(kinesis: KinesisClient, stream: string): Promise<OpenShard[]> {
  const shards = await listShards((input) => kinesis.send(new ListShardsCommand(input)), stream);
  return shards
    .filter((s) => s.SequenceNumberRange?.EndingSequenceNumber === undefined)
    .map((s) => ({
      id: s.ShardId as string,
      start: BigInt(s.HashKeyRange?.StartingHashKey as string),
      end: BigInt(s.HashKeyRange?.EndingHashKey as string),
    }))
    .sort((a, b) => (a.start < b.start ? -1 : 1));
}

async function waitActive(kinesis: KinesisClient, stream: string): Promise<void> {
  const deadline = Date.now() + POLL.deadlineMs;
  for (let wait = POLL.firstMs; ; wait = Math.min(wait * 2, POLL.maxMs)) {
    const out = await kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream }));
    const status = out.StreamDescriptionSummary?.StreamStatus;
    if (status === 'ACTIVE') return;
    if (status === 'DELETING') throw new Error(`stream ${stream} is being deleted`);
    if (Date.now() > deadline)
      throw new Error(`stream ${stream} is still ${status} after ${POLL.deadlineMs / 1000} s`);
    await sleep(wait);
  }
}

async function withRetries<T>(stream: string, call: () => Promise<T>): Promise<T> {
  for (let attempt = 1, wait = 50; ; attempt++, wait = Math.min(wait * 2, 1000)) {
    try {
      return await call();
    } catch (err) {
      if (!RETRYABLE.has((err as Error).name) || attempt >= CALL_ATTEMPTS)
        throw new Error(`stream ${stream}: resharding failed: ${(err as Error).message}`, { cause: err });
      await sleep(wait);
    }
  }
}
