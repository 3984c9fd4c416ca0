import type { KinesisStreamEvent } from 'aws-lambda';
import { createClients } from '../../functions/aws/clients.js';
import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListShardsCommand,
} from '../../functions/aws/kinesis.js';
import { kinesisRecordOf } from '../helpers/kinesis-event.js';

/**
 * Run in a process with test/bundles/aws-at-moto.ts preloaded: reads a stream as an event source
 * mapping does, from its trim horizon, one shard's batch at a time, and hands the batch over as
 * the Kinesis event Lambda would invoke the mapped function with (records as GetRecords returned
 * them, their data untouched).
 */

const clients = createClients({ region: process.env.AWS_REGION ?? 'us-east-1' });
/** Each stream's shards and where the next read of each starts. */
const iterators = new Map<string, Map<string, string | undefined>>();

async function shardsOf(stream: string): Promise<Map<string, string | undefined>> {
  let shards = iterators.get(stream);
  if (shards) return shards;
  shards = new Map();
  const listed = (await clients.kinesis.send(new ListShardsCommand({ StreamName: stream }))).Shards ?? [];
  for (const shard of listed) {
    const { ShardIterator } = await clients.kinesis.send(
      new GetShardIteratorCommand({
        StreamName: stream,
        ShardId: shard.ShardId as string,
        ShardIteratorType: 'TRIM_HORIZON',
      }),
    );
    shards.set(shard.ShardId as string, ShardIterator);
  }
  iterators.set(stream, shards);
  return shards;
}

/** The next batch of `stream` not yet handed over (one shard's), or no records when it has none. */
export async function nextBatch(stream: string, batchSize = 100): Promise<KinesisStreamEvent> {
  const shards = await shardsOf(stream);
  for (const [shardId, iterator] of shards) {
    if (!iterator) continue;
    const page = await clients.kinesis.send(
      new GetRecordsCommand({ ShardIterator: iterator, Limit: batchSize }),
    );
    shards.set(shardId, page.NextShardIterator);
    const records = page.Records ?? [];
    if (records.length === 0) continue;
    return {
      Records: records.map((r) =>
        kinesisRecordOf(
          {
            shardId,
            sequenceNumber: r.SequenceNumber as string,
            partitionKey: r.PartitionKey as string,
            data: r.Data as Uint8Array,
            ...(r.ApproximateArrivalTimestamp ? { arrivedAt: r.ApproximateArrivalTimestamp.getTime() } : {}),
          },
          stream,
        ),
      ),
    };
  }
  return { Records: [] };
}
