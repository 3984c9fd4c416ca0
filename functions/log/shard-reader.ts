import type { SendOptions } from '../aws/aws-json.js';
import { GetRecordsCommand, GetShardIteratorCommand, type KinesisClient } from '../aws/kinesis.js';

/**
 * Reads a shard of the log from a position onward: produce's fast admission (what was appended
 * after the shard's last admitted entry), the expiry watch (the oldest page), trace's lookup of a
 * message by time, and replay (a window of time). A shard serves 5 GetRecords a second shared
 * by every reader that is not on enhanced fan-out (docs/latency.md, "A shard's reads").
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
  /** The shard is closed (resharded) and read to its end: nothing will ever come after. */
  end: boolean;
}

/** Kinesis keeps an iterator for 5 minutes; one is reused for a little less. */
const ITERATOR_REUSE_MS = 240_000;

interface NextRead {
  /** Where the iterator reads from: after this sequence number (undefined: the shard's start). */
  after: string | undefined;
  iterator: string;
  obtainedAt: number;
}

export class ShardReader {
  /**
   * Per shard, the iterator the last `after` read ended with. Produce's fast admission reads each
   * shard right after the last range, which is usually where its previous read ended: the next
   * read then skips GetShardIterator, a round trip and a call a shard serves only 5 of a second.
   */
  private readonly next = new Map<string, NextRead>();

  constructor(private readonly kinesis: KinesisClient) {}

  /**
   * Where the last `after` read of the shard ended, while its iterator is still reusable: a read
   * after it costs no GetShardIterator. Undefined when there is none.
   */
  resumesAfter(stream: string, shard: string): string | undefined {
    const cached = this.next.get(`${stream}/${shard}`);
    return cached && Date.now() - cached.obtainedAt < ITERATOR_REUSE_MS ? cached.after : undefined;
  }

  /**
   * Up to `limit` records after `after` (from the shard's start when undefined), in log order.
   * `read` sets the GetRecords call's own terms (produce's passes answer a refusal themselves).
   */
  async after(
    stream: string,
    shard: string,
    after: string | undefined,
    limit: number,
    read: SendOptions = {},
  ): Promise<RawRecord[]> {
    const at = `${stream}/${shard}`;
    const cached = this.next.get(at);
    const reusable = cached && cached.after === after && Date.now() - cached.obtainedAt < ITERATOR_REUSE_MS;
    const iterator = reusable
      ? cached.iterator
      : await this.iterator(stream, shard, after ? { after } : 'oldest');
    const page = iterator && (await this.read(iterator, limit, read).catch(expiredAsUndefined));
    if (!page) {
      this.next.delete(at);
      // A reused iterator that Kinesis no longer takes: once more with a fresh one.
      return reusable ? this.after(stream, shard, after, limit, read) : [];
    }
    if (page.next)
      this.next.set(at, {
        after: page.records.at(-1)?.sequence ?? after,
        iterator: page.next,
        obtainedAt: reusable ? cached.obtainedAt : Date.now(),
      });
    else this.next.delete(at);
    return page.records;
  }

  /**
   * Pages of up to `limit` records from `from`, at most `maxPages` of them. A page may be empty
   * while the shard goes on (Kinesis skips ahead through empty stretches one call at a time), so
   * a caller that wants records reads on until one arrives or `atTip`. `toEnd`: a closed shard
   * read on past its tip, up to its end (its iterator may answer an empty page at the tip before
   * it answers none).
   */
  async *pages(
    stream: string,
    shard: string,
    from: ReadFrom,
    limit: number,
    maxPages: number,
    toEnd = false,
  ): AsyncGenerator<Page> {
    let iterator = await this.iterator(stream, shard, from);
    for (let page = 0; iterator && page < maxPages; page++) {
      const { records, atTip, end, next } = await this.read(iterator, limit);
      yield { records, atTip, end };
      if (atTip && !toEnd) return;
      iterator = next;
    }
  }

  private async iterator(stream: string, shard: string, from: ReadFrom): Promise<string | undefined> {
    const out = await this.kinesis.send(
      new GetShardIteratorCommand({
        StreamName: stream,
        ShardId: shard,
        ...(from === 'oldest'
          ? { ShardIteratorType: 'TRIM_HORIZON' }
          : 'after' in from
            ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', StartingSequenceNumber: from.after }
            : { ShardIteratorType: 'AT_TIMESTAMP', Timestamp: new Date(from.at) }),
      }),
    );
    return out.ShardIterator;
  }

  private async read(
    iterator: string,
    limit: number,
    options: SendOptions = {},
  ): Promise<Page & { next: string | undefined }> {
    const out = await this.kinesis.send(
      new GetRecordsCommand({ ShardIterator: iterator, Limit: limit }),
      options,
    );
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
    const end = !out.NextShardIterator;
    const atTip = end || (records.length < limit && out.MillisBehindLatest === 0);
    return { records, atTip, end, next: out.NextShardIterator };
  }
}

function expiredAsUndefined(err: unknown): undefined {
  if ((err as { name?: string }).name === 'ExpiredIteratorException') return undefined;
  throw err;
}
