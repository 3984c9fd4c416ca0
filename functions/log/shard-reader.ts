import { GetRecordsCommand, GetShardIteratorCommand, type KinesisClient } from '@aws-sdk/client-kinesis';

/**
 * Reads a shard from a position onward, one page: how produce's fast admission sees what was
 * appended after the shard's last admitted entry (its own records and any other producer's).
 * Each call is two Kinesis reads; a shard serves 5 GetRecords a second shared by every reader
 * that is not on enhanced fan-out (docs/architecture.md, "Latency").
 */

export interface RawRecord {
  sequence: string;
  data: Uint8Array;
  /** When Kinesis took it (epoch ms): its retention counts from here. */
  arrivedAt: number;
}

export class ShardReader {
  constructor(private readonly kinesis: KinesisClient) {}

  /** Up to `limit` records after `after` (from the shard's start when undefined), in log order. */
  async after(stream: string, shard: string, after: string | undefined, limit: number): Promise<RawRecord[]> {
    const { ShardIterator } = await this.kinesis.send(
      new GetShardIteratorCommand({
        StreamName: stream,
        ShardId: shard,
        ...(after
          ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', StartingSequenceNumber: after }
          : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
    );
    if (!ShardIterator) return [];
    const out = await this.kinesis.send(new GetRecordsCommand({ ShardIterator, Limit: limit }));
    return (out.Records ?? []).flatMap((r) =>
      r.SequenceNumber
        ? [
            {
              sequence: r.SequenceNumber,
              data: r.Data ?? new Uint8Array(),
              arrivedAt: r.ApproximateArrivalTimestamp?.getTime() ?? 0,
            },
          ]
        : [],
    );
  }
}
