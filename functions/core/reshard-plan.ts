/**
 * Resharding a stream to a shard count, as plans with no AWS in them: the splits and merges that
 * take a stream's open shards to an even layout (what the local runtime executes, as kinesalite has
 * no UpdateShardCount), and the UpdateShardCount targets AWS needs to get from one count to another.
 *
 * Hash keys are 128-bit integers: a shard owns the inclusive range `start..end`, and a stream's
 * open shards cover 0..2^128-1 with no gap and no overlap.
 */

/** How many hash keys there are: 2^128. */
export const HASH_KEYS = 2n ** 128n;
export const MAX_HASH_KEY = HASH_KEYS - 1n;

/** The most shards a stream may be planned to: the tenant file's bound on `shards` (config.ts). */
export const MAX_STREAM_SHARDS = 500;

/** UpdateShardCount calls AWS allows a stream in a rolling 24 hours. */
export const UPDATE_SHARD_COUNT_CALLS_PER_DAY = 10;

/**
 * A current boundary this close to where the even layout puts one (a fraction of a shard's share)
 * counts as there. Layouts made by different hands put "even" boundaries a few keys apart
 * (kinesalite cuts at i·⌊2^128/n⌋, the plan at ⌊i·2^128/n⌋), and moving a boundary by a few keys
 * would cost a split, a merge and two closed shards for nothing; a split that close to a shard's
 * start is not even allowed.
 */
const SNAP_FRACTION = 1024n;

/** A shard's inclusive hash key range; open shards as ListShards gives them, ids included or not. */
export interface HashRange {
  start: bigint;
  end: bigint;
}

/**
 * One step, naming shards by the first key of their range rather than by id: a split's and a
 * merge's children get ids only when they are made, while the open shard that starts at a key is
 * unique at any time (open shards partition the keys) and a step never moves where its left side
 * starts. An executor looks the start up among the stream's open shards just before each step.
 */
export type ReshardStep =
  /** SplitShard the open shard that starts at `start`; `at` is the right child's first key. */
  | { kind: 'split'; start: bigint; at: bigint }
  /** MergeShards the open shard that starts at `left` with the adjacent one that starts at `right`. */
  | { kind: 'merge'; left: bigint; right: bigint };

export interface PlanOptions {
  /** The most shards the target may be (the stream's or the emulator's room); MAX_STREAM_SHARDS by default. */
  maxShards?: number;
}

/**
 * The splits and merges that take `openShards` to exactly `target` open shards, each a ⌊1/target⌋
 * share of the keys: the layout AWS's UNIFORM_SCALING ends on, so a local stream is cut as the
 * stack's would be. A shard's share of the keys is its share of the writes, and the tenant's
 * capacity (shards × a shard's write rate) assumes even shares: 4 → 3 by a single merge would
 * leave one shard with half the writes at two thirds of the stream's capacity. So the plan may
 * split and merge more than a bare change of count needs (4 → 3: three merges and two splits,
 * not one merge), and a layout already of `target` shards but uneven is evened out.
 *
 * Guarantees, from any valid layout: every step is valid when it comes (a split strictly inside
 * its shard, start + 1 < at < end, as kinesalite checks; a merge of two adjacent open shards);
 * the open shards end contiguous over 0..2^128-1; every final range is within 2/1024 of a
 * shard's even share, so the largest is at most 1.004 × the smallest; a layout already even
 * (by the tolerance of SNAP_FRACTION) plans no step; and the number of steps is the fewest that
 * reach the even layout (one per boundary added or removed).
 *
 * All merges come before all splits, so the stream never has more open shards than
 * max(before, target): kinesalite refuses a split past its shard limit, which counts open
 * shards. The shards in between carry little: a local reshard runs at start-up.
 */
export function planSplitsAndMerges(
  openShards: readonly HashRange[],
  target: number,
  options: PlanOptions = {},
): ReshardStep[] {
  checkTarget('target', target, options.maxShards);
  const current = boundariesOf(openShards);
  const wanted = evenBoundaries(target, current);
  const keep = new Set(wanted);

  // Every boundary of the layout at that point, as the first keys of its open shards, in order.
  const layout = [0n, ...current];
  const steps: ReshardStep[] = [];
  for (const b of current) {
    if (keep.has(b)) continue;
    const i = layout.indexOf(b);
    steps.push({ kind: 'merge', left: layout[i - 1] as bigint, right: b });
    layout.splice(i, 1);
  }
  const existing = new Set(current);
  for (const b of wanted) {
    if (existing.has(b)) continue;
    // Splits go in key order, so the shard that holds `b` starts at the last boundary so far.
    let i = layout.length - 1;
    while ((layout[i] as bigint) > b) i--;
    steps.push({ kind: 'split', start: layout[i] as bigint, at: b });
    layout.splice(i + 1, 0, b);
  }
  return steps;
}

/**
 * The inner boundaries (first keys of every shard but the first) of `target` even shards:
 * ⌊i·2^128/target⌋, which keeps every boundary of `target` among those of its multiples
 * (3 → 6 splits each shard once), with each one at a boundary of `current` within tolerance.
 */
function evenBoundaries(target: number, current: readonly bigint[]): bigint[] {
  const share = HASH_KEYS / BigInt(target);
  const tolerance = share / SNAP_FRACTION;
  const out: bigint[] = [];
  for (let i = 1; i < target; i++) {
    const ideal = (BigInt(i) * HASH_KEYS) / BigInt(target);
    const near = nearest(current, ideal);
    out.push(near !== undefined && abs(near - ideal) <= tolerance ? near : ideal);
  }
  return out;
}

/** The element of sorted `xs` nearest to `x` (the lower one on a tie). */
function nearest(xs: readonly bigint[], x: bigint): bigint | undefined {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((xs[mid] as bigint) < x) lo = mid + 1;
    else hi = mid;
  }
  const below = xs[lo - 1];
  const above = xs[lo];
  if (below === undefined) return above;
  if (above === undefined) return below;
  return x - below <= above - x ? below : above;
}

const abs = (x: bigint) => (x < 0n ? -x : x);

/** The first keys of every open shard but the first, in order, once the shards check out as a layout. */
function boundariesOf(openShards: readonly HashRange[]): bigint[] {
  if (openShards.length === 0) throw new RangeError('a stream has at least one open shard; none given');
  const sorted = [...openShards].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  let next = 0n;
  for (const s of sorted) {
    if (s.end < s.start) throw new RangeError(`shard ${s.start}..${s.end} ends before it starts`);
    if (s.start < next) throw new RangeError(`open shards overlap at hash key ${s.start}`);
    if (s.start > next)
      throw new RangeError(`open shards leave hash keys ${next}..${s.start - 1n} uncovered`);
    next = s.end + 1n;
  }
  if (next !== HASH_KEYS)
    throw new RangeError(
      next < HASH_KEYS
        ? `open shards leave hash keys ${next}..${MAX_HASH_KEY} uncovered`
        : `open shards run past the last hash key ${MAX_HASH_KEY}`,
    );
  return sorted.slice(1).map((s) => s.start);
}

function checkTarget(name: string, count: number, maxShards = MAX_STREAM_SHARDS): void {
  if (!Number.isSafeInteger(maxShards) || maxShards < 1)
    throw new RangeError(`maxShards must be a whole number of at least 1, not ${maxShards}`);
  if (!Number.isInteger(count))
    throw new RangeError(`${name} must be a whole number of shards, not ${count}`);
  if (count < 1) throw new RangeError(`${name} must be at least 1 shard, not ${count}`);
  if (count > maxShards) throw new RangeError(`${name} must be at most ${maxShards} shards, not ${count}`);
}

/**
 * The ShardCount values a stack must deploy one after the other to go from `current` to `target`
 * shards on AWS: CloudFormation makes one UpdateShardCount call per change, and AWS takes a
 * count only between half (rounded up) and double the open count before it. The fewest steps:
 * each doubles or halves until the target is within reach (2 → 8: [4, 8]; 8 → 3: [4, 3]).
 */
export function planShardCountSteps(current: number, target: number, options: PlanOptions = {}): number[] {
  checkTarget('current', current, Math.max(current, options.maxShards ?? MAX_STREAM_SHARDS));
  checkTarget('target', target, options.maxShards);
  const steps: number[] = [];
  let at = current;
  while (at !== target) {
    at = target > at ? Math.min(at * 2, target) : Math.max(Math.ceil(at / 2), target);
    steps.push(at);
  }
  return steps;
}

/**
 * How many of a stream's UPDATE_SHARD_COUNT_CALLS_PER_DAY a change of count spends, and whether
 * it fits in one rolling day (any change within MAX_STREAM_SHARDS takes at most 9).
 */
export function shardCountCalls(
  current: number,
  target: number,
  options: PlanOptions = {},
): { calls: number; fitsInADay: boolean } {
  const calls = planShardCountSteps(current, target, options).length;
  return { calls, fitsInADay: calls <= UPDATE_SHARD_COUNT_CALLS_PER_DAY };
}
