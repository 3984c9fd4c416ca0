import { toLogRecords } from '../admission/fast-admission.js';
import { consumerNamespace, type QueueConfig } from '../core/config.js';
import { compareSequence } from '../core/ranges.js';
import type { ShardReader } from '../log/shard-reader.js';
import type { ShardDirectory } from '../log/stream.js';
import type { Counters } from '../store/counters.js';
import type { ExpiryMarks } from '../store/expiry-marks.js';
import type { RangeStore } from '../store/ranges.js';

/**
 * `expired_unprocessed`: records that leave a queue's stream before they were admitted
 * (by the queue, or by one of its Lambda consumers) are lost to it, and the owner must hear it.
 * Once a gauge interval the sweep reads each shard's oldest record, and when it is near its trim
 * the oldest page (from the trim horizon), and counts, once each, the records within
 * EXPIRY_MARGIN_MS of Kinesis trimming them that are still past the shard's last range. They
 * are counted just before they go, since nothing can read them after: one admitted in those last
 * minutes was counted anyway (a false alarm, never a missed one while the sweep runs).
 */

export interface ExpiryWatchDeps {
  tenant: string;
  shards: ShardDirectory;
  reader: ShardReader;
  ranges: RangeStore;
  marks: ExpiryMarks;
  counters: Counters;
  now?: () => number;
}

/** Two gauge intervals: a record this close to its trim may be gone by the next look. */
export const EXPIRY_MARGIN_MS = 2 * 60_000;
/** The oldest records of a shard one look reads. */
const PAGE = 1000;

export class ExpiryWatch {
  constructor(private readonly deps: ExpiryWatchDeps) {}

  /**
   * Counts (into the totals) the records about to expire unadmitted, for the queue or, on a push
   * queue, for each Lambda consumer that has not admitted them (the queue's total sums them).
   * Answers how many were new, by namespace.
   */
  async check(queue: string, config: QueueConfig): Promise<Map<string, number>> {
    const now = this.deps.now?.() ?? Date.now();
    const trimmedBefore = now - config.retention_hours * 3_600_000 + EXPIRY_MARGIN_MS;
    const stream = config.stream;
    const namespaces = config.consumers.length
      ? config.consumers.map((c) => consumerNamespace(queue, c.name))
      : [queue];
    const counted = new Map(namespaces.map((ns) => [ns, 0]));
    for (const shard of await this.deps.shards.shards(stream)) {
      // The oldest record first: a page is read only when something is near its trim (a page of
      // a thousand records every look held up the shard's other readers, and locally every call).
      const [first] = await this.deps.reader.after(stream, shard, undefined, 1);
      if (!first || first.arrivedAt >= trimmedBefore) continue;
      // The rest of the page goes on from the first's read, with no second iterator.
      const oldest = [first, ...(await this.deps.reader.after(stream, shard, first.sequence, PAGE - 1))];
      const near = toLogRecords(
        oldest.filter((r) => r.arrivedAt < trimmedBefore),
        queue,
        config,
      );
      for (const namespace of namespaces) {
        const [head, mark] = await Promise.all([
          this.deps.ranges.head(namespace, shard),
          this.deps.marks.get(namespace, shard),
        ]);
        const past = (a: string, b: string | undefined) => b === undefined || compareSequence(a, b) > 0;
        const expiring = near.filter((r) => past(r.sequence, head?.last) && past(r.sequence, mark));
        const last = expiring.at(-1);
        if (!last) continue;
        // The mark first: counted twice would be a second alarm for the same loss, counted never worse.
        await this.deps.marks.set(namespace, shard, last.sequence);
        await this.deps.counters.addStats(namespace, { expired_unprocessed: expiring.length });
        if (namespace !== queue)
          await this.deps.counters.addStats(queue, { expired_unprocessed: expiring.length });
        counted.set(namespace, (counted.get(namespace) ?? 0) + expiring.length);
      }
    }
    return counted;
  }
}
