import type { ShardReader } from './shard-reader.js';

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
  constructor(private readonly reader: ShardReader) {}

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
    // The id is looked for in the raw bytes first: most records are not it, and need no parse.
    const needle = Buffer.from(`"message_id":${JSON.stringify(messageId)}`);
    for await (const page of this.reader.pages(stream, shard, { at: atMs - BEFORE_MS }, 1000, MAX_PAGES)) {
      for (const r of page.records) {
        if (r.arrivedAt > atMs + AFTER_MS) return undefined;
        if (Buffer.from(r.data).includes(needle) && accept(r.sequence))
          return { shard, sequence: r.sequence };
      }
    }
    return undefined;
  }
}
