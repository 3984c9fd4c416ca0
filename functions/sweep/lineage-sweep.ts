import { toLogRecords } from '../admission/fast-admission.js';
import type { QueueConfig } from '../core/config.js';
import { compareSequence } from '../core/ranges.js';
import { mayFinish, type ShardProgress } from '../core/shard-lineage.js';
import type { OrderedLook } from '../delivery/ordered-look.js';
import type { ShardReader } from '../log/shard-reader.js';
import type { ShardDirectory } from '../log/stream.js';
import type { RangeStore } from '../store/ranges.js';
import type { ShardMarks } from '../store/shard-marks.js';

/**
 * The sweep's part in a resharded stream (core/shard-lineage.ts): per pull queue, each closed
 * shard is marked `ended` once a read from the queue's last range to the shard's end meets no
 * record of the queue (dispatch or the lag catch-up admits any it meets first), and `finished`
 * once its window is empty, no key is blocked in it and its parents are finished. A stream that
 * was never resharded costs nothing here but its cached listing.
 */
export interface LineageSweepDeps {
  shards: Pick<ShardDirectory, 'lineage'>;
  marks: ShardMarks;
  reader: ShardReader;
  ranges: Pick<RangeStore, 'head'>;
  windows: Pick<OrderedLook, 'whole'>;
}

/** Records read per page, and pages a pass reads of one shard, looking for its end. */
const PAGE = 1000;
const PAGES_PER_PASS = 4;
/** A window longer than this many ranges is not finished yet: no need to read it all. */
const MAX_RANGES = 64;

export class LineageSweep {
  constructor(private readonly deps: LineageSweepDeps) {}

  /** Moves the queue's closed shards on; answers whether one of them is not ended yet. */
  async sweep(queue: string, config: QueueConfig, now: number): Promise<{ unended: boolean }> {
    const links = await this.deps.shards.lineage(config.stream, now);
    // Shard ids grow with each reshard: parents before their children.
    const closed = [...links.values()].filter((l) => l.closed).sort((a, b) => a.id.localeCompare(b.id));
    if (!closed.length) return { unended: false };
    const marks = await this.deps.marks.all(queue);
    const progress = new Map<string, ShardProgress>();
    for (const [shard, mark] of marks) if (mark.progress) progress.set(shard, mark.progress);
    let unended = false;
    for (const link of closed) {
      if (progress.get(link.id) === 'finished') continue;
      if (progress.get(link.id) !== 'ended') {
        // A shard the stream no longer lists is past its retention: nothing of it is left to admit.
        if (link.listed && !(await this.ended(queue, config, link.id, marks.get(link.id)?.checkedThrough))) {
          unended = true;
          continue;
        }
        await this.deps.marks.mark(queue, link.id, 'ended', now);
        progress.set(link.id, 'ended');
      }
      const window = await this.deps.windows.whole(queue, link.id, MAX_RANGES, now);
      if (window && mayFinish(link, progress, window, now)) {
        await this.deps.marks.mark(queue, link.id, 'finished', now);
        progress.set(link.id, 'finished');
      }
    }
    return { unended };
  }

  /**
   * Whether every record of the queue in the closed shard is in its ranges: read from the later
   * of its last range and where an earlier check got to, through the shard's end.
   */
  private async ended(
    queue: string,
    config: QueueConfig,
    shard: string,
    checked: string | undefined,
  ): Promise<boolean> {
    const head = (await this.deps.ranges.head(queue, shard))?.last;
    const after =
      head && checked ? (compareSequence(head, checked) >= 0 ? head : checked) : (head ?? checked);
    let through: string | undefined;
    for await (const page of this.deps.reader.pages(
      config.stream,
      shard,
      after ? { after } : 'oldest',
      PAGE,
      PAGES_PER_PASS,
      true,
    )) {
      if (toLogRecords(page.records, queue, config).length) return false;
      through = page.records.at(-1)?.sequence ?? through;
      if (page.end) return true;
    }
    if (through) await this.deps.marks.checked(queue, shard, through);
    return false;
  }
}
