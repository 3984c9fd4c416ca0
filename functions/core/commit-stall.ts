/**
 * `commit_stalled_seconds` (a poison message stalling an ordered shard): how long a shard's commit
 * point (its lowest unfinished entry) has not moved while there is something unfinished. A backlog
 * that drains moves it; a head that keeps failing, or a lease held far too long, does not. The
 * sweep keeps a mark per shard (the position and since when it has been there), a gauge interval
 * apart; a stats answer compares where the commit point is now with the marks.
 */

export interface CommitMark {
  /** The lowest unfinished entry: its range's first sequence number and its index. */
  at: string;
  /** Epoch ms of the first look that found it there. */
  since: number;
}

export type CommitMarks = Record<string, CommitMark>;

/**
 * From the marks and where each shard's commit point is now (undefined: nothing unfinished): how
 * long each shard has been stalled, in seconds, and the marks to keep.
 */
export function commitStall(
  marks: CommitMarks,
  positions: Record<string, string | undefined>,
  now: number,
): { stalledSeconds: Record<string, number>; marks: CommitMarks } {
  const stalledSeconds: Record<string, number> = {};
  const next: CommitMarks = {};
  for (const [shard, at] of Object.entries(positions)) {
    const mark = marks[shard];
    if (at === undefined) {
      stalledSeconds[shard] = 0;
      continue;
    }
    const since = mark?.at === at ? mark.since : now;
    next[shard] = { at, since };
    stalledSeconds[shard] = Math.max(0, Math.floor((now - since) / 1000));
  }
  return { stalledSeconds, marks: next };
}

/** Whether two sets of marks say the same, whatever the order of their shards. */
export function sameMarks(a: CommitMarks, b: CommitMarks): boolean {
  const shards = Object.keys(a);
  return (
    shards.length === Object.keys(b).length &&
    shards.every((shard) => a[shard]?.at === b[shard]?.at && a[shard]?.since === b[shard]?.since)
  );
}
