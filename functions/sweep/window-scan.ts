import { compareSequence, type Range } from '../core/ranges.js';
import { frontLength, REST_PER_PASS, sweepRanges } from '../core/sweep-front.js';
import type { RangeStore } from '../store/ranges.js';

/**
 * The ranges of a pull queue's shard that a sweep pass reads (core/sweep-front.ts): the front from
 * the commit point, the head, and the rest of the window a few ranges a pass, in turn, from where
 * this instance's last pass left off. A pass reads about as much behind a backlog of a million
 * entries as behind none; a lease only a turn of the rest finds is found within a window's worth
 * of passes (30 s for a full default window).
 */

/** Ranges a front read asks for at a time: a slow consumer's front is a range or two and a look. */
const FRONT_PAGE = 16;
/** The longest front read: the gap cap bounds the leased ranges, this bounds the read if it did not. */
const FRONT_MAX = 1000;

export class WindowScan {
  /** Per queue and shard, the last range of the rest the previous pass read. */
  private readonly restAfter = new Map<string, string>();

  constructor(private readonly ranges: Pick<RangeStore, 'commitHint' | 'from' | 'head'>) {}

  async read(queue: string, shard: string): Promise<Range[]> {
    const start = await this.ranges.commitHint(queue, shard);
    const [front, head] = await Promise.all([
      this.front(queue, shard, start),
      this.ranges.head(queue, shard),
    ]);
    const end = front.at(-1);
    const at = `${queue}\u0000${shard}`;
    if (!end || !head || compareSequence(end.start, head.start) >= 0) {
      this.restAfter.delete(at);
      return sweepRanges(front, [], head);
    }
    const after = this.restAfter.get(at);
    const from = after !== undefined && compareSequence(after, end.start) > 0 ? after : end.start;
    const rest = (await this.ranges.from(queue, shard, from, REST_PER_PASS + 1))
      .filter((r) => compareSequence(r.start, from) > 0)
      .slice(0, REST_PER_PASS);
    const last = rest.at(-1);
    // The turn ends at the head: the next one starts again after the front.
    if (last && rest.length === REST_PER_PASS) this.restAfter.set(at, last.start);
    else this.restAfter.delete(at);
    return sweepRanges(front, rest, head);
  }

  /** The front's ranges: read a page at a time from the commit point until it ends. */
  private async front(queue: string, shard: string, start: string | undefined): Promise<Range[]> {
    const read: Range[] = [];
    while (read.length < FRONT_MAX) {
      // From the last range read (inclusive, so asked for one more), or the commit point.
      const after = read.at(-1)?.start;
      const asked = FRONT_PAGE + (after === undefined ? 0 : 1);
      const page = await this.ranges.from(queue, shard, after ?? start, asked);
      read.push(...page.filter((r) => after === undefined || compareSequence(r.start, after) > 0));
      const length = frontLength(read);
      if (length !== undefined) return read.slice(0, length);
      if (page.length < asked) return read;
    }
    return read;
  }
}
