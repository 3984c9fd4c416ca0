import { GetRecordsCommand, GetShardIteratorCommand, type KinesisClient } from '@aws-sdk/client-kinesis';

/**
 * Reads a shard of the log from a position onward: produce's fast admission (what was appended
 * after the shard's last admitted entry), the expiry watch (the oldest page), trace's lookup of a
 * message by time, and replay (a window of time). A shard serves 5 GetRecords a second shared
 * by every reader that is not on enhanced fan-out (docs/architecture.md, "Latency").
 */

export interface RawRecord {
  sequence: string;
  data: Uint8Array;
  /** When Kinesis took it (epoch ms): its retention counts from here. */
  arrivedAt: number;
}

/** Where a read starts: after a sequence number, at a time, or at the shard's oldest record. */
export type ReadFrom = { after: string } | { at: number } | 'oldest';

export interface Page {
  records: RawRecord[];
  /** Nothing after these records yet: the reader is at the shard's tip. */
  atTip: boolean;
}

export class ShardReader {
  constructor(private readonly kinesis: KinesisClient) {}

  /** Up to `limit` records after `after` (from the shard's start when undefined), in log order. */
  async after(stream: string, shard: string, after: string | undefined, limit: number): Promise<RawRecord[]> {
    for await (const page of this.pages(stream, shard, after ? { after } : 'oldest', limit, 1))
      return page.records;
    return [];
  }

  /**
   * Pages of up to `limit` records from `from`, at most `maxPages` of them. A page may be empty
   * while the shard goes on (Kinesis skips ahead through empty stretches one call at a time), so
   * a caller that wants records reads on until one arrives or `atTip`.
   */
  async *pages(
    stream: string,
    shard: string,
    from: ReadFrom,
    limit: number,
    maxPages: number,
  ): AsyncGenerator<Page> {
    let iterator = (
      await this.kinesis.send(
        new GetShardIteratorCommand({
          StreamName: stream,
          ShardId: shard,
          ...(from === 'oldest'
            ? { ShardIteratorType: 'TRIM_HORIZON' }
            : 'after' in from
              ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', StartingSequenceNumber: from.after }
              : { ShardIteratorType: 'AT_TIMESTAMP', Timestamp: new Date(from.at) }),
        }),
      )
    ).ShardIterator;
    for (let page = 0; iterator && page < maxPages; page++) {
      const out = await this.kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: limit }));
      const records = (out.Records ?? []).flatMap((r) =>
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
      // A closed shard's iterator ends: nothing more will come.
      const atTip = !out.NextShardIterator || (records.length < limit && out.MillisBehindLatest === 0);
      yield { records, atTip };
      if (atTip) return;
      iterator = out.NextShardIterator;
    }
  }
}
