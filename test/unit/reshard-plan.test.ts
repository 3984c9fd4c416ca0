import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  HASH_KEYS,
  type HashRange,
  MAX_HASH_KEY,
  planShardCountSteps,
  planSplitsAndMerges,
  type ReshardStep,
  shardCountCalls,
} from '../../functions/core/reshard-plan.js';

/** What CreateStream makes (kinesalite's cut: i·⌊2^128/n⌋, the last shard takes the rest). */
function created(n: number): HashRange[] {
  const share = HASH_KEYS / BigInt(n);
  return Array.from({ length: n }, (_, i) => ({
    start: share * BigInt(i),
    end: i === n - 1 ? MAX_HASH_KEY : share * BigInt(i + 1) - 1n,
  }));
}

/**
 * Applies a step as kinesalite does, failing on what it refuses: a split's new starting key must
 * be above its shard's start + 1 and below its end; merged shards must be adjacent, left first.
 * Returns the open shards in key order.
 */
function apply(open: HashRange[], step: ReshardStep): HashRange[] {
  const at = (start: bigint) => {
    const i = open.findIndex((s) => s.start === start);
    if (i < 0) throw new Error(`no open shard starts at ${start}`);
    return i;
  };
  if (step.kind === 'split') {
    const i = at(step.start);
    const s = open[i] as HashRange;
    if (!(step.at > s.start + 1n && step.at < s.end))
      throw new Error(`split at ${step.at} outside its shard`);
    return [
      ...open.slice(0, i),
      { start: s.start, end: step.at - 1n },
      { start: step.at, end: s.end },
      ...open.slice(i + 1),
    ];
  }
  const i = at(step.left);
  const j = at(step.right);
  const [l, r] = [open[i] as HashRange, open[j] as HashRange];
  if (l.end + 1n !== r.start) throw new Error(`merge of ${step.left} and ${step.right}: not adjacent`);
  return [...open.slice(0, i), { start: l.start, end: r.end }, ...open.slice(j + 1)];
}

function run(open: HashRange[], steps: ReshardStep[]): { final: HashRange[]; peak: number } {
  let peak = open.length;
  for (const step of steps) {
    open = apply(open, step);
    peak = Math.max(peak, open.length);
  }
  return { final: open, peak };
}

function expectCovering(open: HashRange[]): void {
  let next = 0n;
  for (const s of open) {
    expect(s.start).toBe(next);
    expect(s.end).toBeGreaterThanOrEqual(s.start);
    next = s.end + 1n;
  }
  expect(next).toBe(HASH_KEYS);
}

const size = (s: HashRange) => s.end - s.start + 1n;

/** Largest range ×1000 against smallest ×1004: the plan's evenness bound, in whole numbers. */
function expectEven(open: HashRange[]): void {
  // Sorted rather than Math.min/max, which take no bigints.
  const sizes = open.map(size).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const [min, max] = [sizes[0] as bigint, sizes[sizes.length - 1] as bigint];
  expect(max * 1000n <= min * 1004n, `largest ${max} against smallest ${min}`).toBe(true);
}

/**
 * Layouts a stream can have: created with 1..8 shards, then reshaped by splits and merges, some
 * of them a few keys from an even boundary of some count (where the plan's tolerance matters)
 * and some leaving slivers of a few keys.
 */
const op = fc.record({
  split: fc.boolean(),
  pick: fc.nat(),
  where: fc.oneof(
    fc.bigInt(0n, MAX_HASH_KEY).map((k) => ({ key: k })),
    fc.record({ of: fc.integer({ min: 2, max: 16 }), i: fc.nat(), delta: fc.bigInt(-3n, 3n) }),
  ),
});
const layoutArb = fc
  .record({ n: fc.integer({ min: 1, max: 8 }), ops: fc.array(op, { maxLength: 12 }) })
  .map(({ n, ops }) => {
    let open = created(n);
    for (const o of ops) {
      if (o.split) {
        const key =
          'key' in o.where
            ? o.where.key
            : (BigInt((o.where.i % (o.where.of - 1)) + 1) * HASH_KEYS) / BigInt(o.where.of) + o.where.delta;
        const s = open.find((s) => s.start <= key && key <= s.end) as HashRange;
        // Where the key is not allowed in its shard, the nearest key that is.
        if (s.end - s.start < 3n) continue;
        const at = key < s.start + 2n ? s.start + 2n : key > s.end - 1n ? s.end - 1n : key;
        open = apply(open, { kind: 'split', start: s.start, at });
      } else if (open.length > 1) {
        const i = o.pick % (open.length - 1);
        open = apply(open, {
          kind: 'merge',
          left: (open[i] as HashRange).start,
          right: (open[i + 1] as HashRange).start,
        });
      }
    }
    return open;
  });
const shuffled = <T>(xs: T[], seed: number) =>
  xs
    .map((x, i) => ({ x, k: (i * 7919 + seed) % 104729 }))
    .sort((a, b) => a.k - b.k)
    .map(({ x }) => x);

describe('planSplitsAndMerges', () => {
  it('takes any layout to exactly the target, every step valid, covering every key, evenly', () => {
    fc.assert(
      fc.property(layoutArb, fc.integer({ min: 1, max: 16 }), fc.nat(), (layout, target, seed) => {
        // The open shards in the order an API may list them.
        const steps = planSplitsAndMerges(shuffled(layout, seed), target);
        const { final, peak } = run(layout, steps);
        expect(final).toHaveLength(target);
        expectCovering(final);
        expectEven(final);
        // Merges first: never more open shards than before or after.
        expect(peak).toBeLessThanOrEqual(Math.max(layout.length, target));
        // Planned again on its own result, the plan has nothing left to do.
        expect(planSplitsAndMerges(final, target)).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('from an even layout, changes only the boundaries the target moves', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 8 }), (n, k) => {
        const multiple = n * k;
        // Up to a multiple: splits only, each shard into k.
        const up = planSplitsAndMerges(created(n), multiple, { maxShards: 512 });
        expect(up).toHaveLength(multiple - n);
        expect(up.every((s) => s.kind === 'split')).toBe(true);
        // Down to a divisor: merges only.
        const down = planSplitsAndMerges(created(multiple), n, { maxShards: 512 });
        expect(down).toHaveLength(multiple - n);
        expect(down.every((s) => s.kind === 'merge')).toBe(true);
        // To the same count: nothing (kinesalite's cut is even within the tolerance).
        expect(planSplitsAndMerges(created(n), n)).toEqual([]);
      }),
    );
  });

  it('2 → 4 splits each shard at its midpoint', () => {
    expect(planSplitsAndMerges(created(2), 4)).toEqual([
      { kind: 'split', start: 0n, at: 2n ** 126n },
      { kind: 'split', start: 2n ** 127n, at: 3n * 2n ** 126n },
    ]);
  });

  it('4 → 3 merges down, then splits at the thirds: even thirds rather than a half and two quarters', () => {
    const third = HASH_KEYS / 3n;
    const twoThirds = (2n * HASH_KEYS) / 3n;
    const steps = planSplitsAndMerges(created(4), 3);
    expect(steps).toEqual([
      { kind: 'merge', left: 0n, right: 2n ** 126n },
      { kind: 'merge', left: 0n, right: 2n ** 127n },
      { kind: 'merge', left: 0n, right: 3n * 2n ** 126n },
      { kind: 'split', start: 0n, at: third },
      { kind: 'split', start: third, at: twoThirds },
    ]);
    expect(run(created(4), steps).final).toEqual([
      { start: 0n, end: third - 1n },
      { start: third, end: twoThirds - 1n },
      { start: twoThirds, end: MAX_HASH_KEY },
    ]);
  });

  it('8 → 3 takes seven merges and two splits', () => {
    const steps = planSplitsAndMerges(created(8), 3);
    expect(steps.filter((s) => s.kind === 'merge')).toHaveLength(7);
    expect(steps.filter((s) => s.kind === 'split')).toHaveLength(2);
    const { final } = run(created(8), steps);
    expect(final).toHaveLength(3);
    expectEven(final);
  });

  it('1 → 1 is nothing to do; an uneven layout of the target count is evened out', () => {
    expect(planSplitsAndMerges(created(1), 1)).toEqual([]);
    const uneven = [
      { start: 0n, end: 2n ** 126n - 1n },
      { start: 2n ** 126n, end: MAX_HASH_KEY },
    ];
    expect(planSplitsAndMerges(uneven, 2)).toEqual([
      { kind: 'merge', left: 0n, right: 2n ** 126n },
      { kind: 'split', start: 0n, at: 2n ** 127n },
    ]);
  });

  it('refuses a target out of bounds and open shards that do not cover the keys once', () => {
    expect(() => planSplitsAndMerges(created(2), 0)).toThrow('at least 1 shard');
    expect(() => planSplitsAndMerges(created(2), 1.5)).toThrow('whole number');
    expect(() => planSplitsAndMerges(created(2), 501)).toThrow('at most 500 shards');
    expect(() => planSplitsAndMerges(created(2), 11, { maxShards: 10 })).toThrow('at most 10 shards');
    expect(() => planSplitsAndMerges([], 1)).toThrow('none given');
    const [a, b] = created(2) as [HashRange, HashRange];
    expect(() => planSplitsAndMerges([a], 2)).toThrow(`hash keys ${b.start}..${MAX_HASH_KEY} uncovered`);
    expect(() => planSplitsAndMerges([b], 2)).toThrow(`hash keys 0..${a.end} uncovered`);
    expect(() => planSplitsAndMerges([a, { ...b, start: b.start + 5n }], 2)).toThrow('uncovered');
    expect(() => planSplitsAndMerges([a, { ...b, start: b.start - 1n }], 2)).toThrow('overlap');
    expect(() => planSplitsAndMerges([a, { ...b, end: HASH_KEYS }], 2)).toThrow('past the last hash key');
  });
});

describe('planShardCountSteps', () => {
  it('names the UpdateShardCount targets, each within half to double the one before', () => {
    expect(planShardCountSteps(2, 8)).toEqual([4, 8]);
    expect(planShardCountSteps(8, 3)).toEqual([4, 3]);
    expect(planShardCountSteps(1, 1)).toEqual([]);
    expect(planShardCountSteps(3, 1)).toEqual([2, 1]);
    expect(planShardCountSteps(3, 5)).toEqual([5]);
  });

  it('takes the fewest steps, each one AWS accepts, for any pair of counts', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 500 }), fc.integer({ min: 1, max: 500 }), (current, target) => {
        const steps = planShardCountSteps(current, target);
        let at = current;
        for (const next of steps) {
          expect(next).toBeGreaterThanOrEqual(Math.ceil(at / 2));
          expect(next).toBeLessThanOrEqual(at * 2);
          expect(next).not.toBe(at);
          at = next;
        }
        expect(at).toBe(target);
        // One step fewer cannot reach: the farthest any count goes in that many steps falls short.
        let reach = current;
        for (let i = 0; i < steps.length - 1; i++)
          reach = target > current ? reach * 2 : Math.ceil(reach / 2);
        if (steps.length > 0)
          expect(target > current ? reach < target : reach > target, `${current} → ${target}`).toBe(true);
        expect(shardCountCalls(current, target)).toEqual({ calls: steps.length, fitsInADay: true });
      }),
    );
  });

  it('counts the daily calls a change spends, and says when it needs more than a day', () => {
    expect(shardCountCalls(1, 500)).toEqual({ calls: 9, fitsInADay: true });
    expect(shardCountCalls(500, 1)).toEqual({ calls: 9, fitsInADay: true });
    expect(shardCountCalls(1, 4000, { maxShards: 10_000 })).toEqual({ calls: 12, fitsInADay: false });
  });

  it('refuses counts out of bounds', () => {
    expect(() => planShardCountSteps(0, 2)).toThrow('current must be at least 1 shard');
    expect(() => planShardCountSteps(2, 0)).toThrow('target must be at least 1 shard');
    expect(() => planShardCountSteps(2, 501)).toThrow('at most 500 shards');
    expect(() => planShardCountSteps(2, 2.5)).toThrow('whole number');
  });
});
