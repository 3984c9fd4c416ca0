import { GetRecordsCommand, GetShardIteratorCommand, type KinesisClient } from '@aws-sdk/client-kinesis';

/**
 * Finds a message in the log by the time it was appended: how trace locates a message whose id
 * the server assigned (a ULID, which carries that time), since no record of its position is
 * written for it. Reads each shard from a little before that time until a little after it,
 * at most a few pages: a trace is an operator's call, and a shard serves 5 reads a second.
 */

/** The producer's clock and Kinesis's arrival time differ by the produce call's duration. */
const BEFORE_MS = 2000;
const AFTER_MS = 10_000;
const MAX_PAGES = 10;

export class LogLookup {
  constructor(private readonly kinesis: KinesisClient) {}

  /** The first record of `messageId` near `atMs` (`accept`ed, when given: one copy among several). */
  async findAround(
    stream: string,
    shards: readonly string[],
    messageId: string,
    atMs: number,
    accept: (sequence: string) => boolean = () => true,
  ): Promise<{ shard: string; sequence: string } | undefined> {
    const found = await Promise.all(
      shards.map((shard) => this.inShard(stream, shard, messageId, atMs, accept)),
    );
    return found.find((f) => f !== undefined);
  }

  private async inShard(
    stream: string,
    shard: string,
    messageId: string,
    atMs: number,
    accept: (sequence: string) => boolean,
  ) {
    let iterator = (
      await this.kinesis.send(
        new GetShardIteratorCommand({
          StreamName: stream,
          ShardId: shard,
          ShardIteratorType: 'AT_TIMESTAMP',
          Timestamp: new Date(atMs - BEFORE_MS),
        }),
      )
    ).ShardIterator;
    // The id is looked for in the raw bytes first: most records are not it, and need no parse.
    const needle = Buffer.from(`"message_id":${JSON.stringify(messageId)}`);
    for (let page = 0; iterator && page < MAX_PAGES; page++) {
      const out = await this.kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
      for (const r of out.Records ?? []) {
        if ((r.ApproximateArrivalTimestamp?.getTime() ?? 0) > atMs + AFTER_MS) return undefined;
        if (r.Data && Buffer.from(r.Data).includes(needle) && r.SequenceNumber && accept(r.SequenceNumber))
          return { shard, sequence: r.SequenceNumber };
      }
      if (!out.Records?.length && out.MillisBehindLatest === 0) return undefined;
      iterator = out.NextShardIterator;
    }
    return undefined;
  }
}
