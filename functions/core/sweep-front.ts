import { compareSequence, freeEntries, RANGES_PER_LOOK, type Range } from './ranges.js';

/**
 * Where a pull queue's leases can be, so the sweep reads those ranges each pass and not the
 * whole window (a backlog of free entries would cost every pass a read of all of it).
 *
 * A receive's look reads RANGES_PER_LOOK ranges from its lease frontier, which is at or below the
 * lowest range with a free entry, and leases only there; nothing turns a leased entry free again
 * (core/ranges.ts). So the first range that holds a free entry and was never leased from stays
 * where it is or moves up, and every lease a look wrote lies below it or within RANGES_PER_LOOK
 * ranges from it: the front. Leases written another way (an admission hands new ranges to long
 * polls waiting in its process, which found nothing in their looks) are at the head when written:
 * the head is read each pass, and the rest of the window in turn, a few ranges a pass.
 */

/** Ranges of the rest of the window a pass reads, in turn: a full default window is 500 ranges. */
export const REST_PER_PASS = 16;

/**
 * How many of `ranges` (read in order from the commit point) make the front, or undefined when
 * it goes on past them: through the first untouched range (a free entry, no lease, no retry) and
 * the RANGES_PER_LOOK ranges after it.
 */
export function frontLength(ranges: readonly Range[]): number | undefined {
  const first = ranges.findIndex(untouched);
  if (first < 0 || first + 1 + RANGES_PER_LOOK > ranges.length) return undefined;
  return first + 1 + RANGES_PER_LOOK;
}

function untouched(range: Range): boolean {
  return range.leases.size === 0 && range.retrying.size === 0 && freeEntries(range).length > 0;
}

/**
 * The ranges a pass attends to, in order, each once: the front, the rest's turn, and the head
 * (whose end the gap cap counts from).
 */
export function sweepRanges(
  front: readonly Range[],
  rest: readonly Range[],
  head: Range | undefined,
): Range[] {
  const out = [...front];
  for (const range of [...rest, ...(head ? [head] : [])]) {
    const last = out.at(-1);
    if (!last || compareSequence(range.start, last.start) > 0) out.push(range);
  }
  return out;
}
