import { describe, expect, it } from 'vitest';
import { compareSequence, type Lease, RANGES_PER_LOOK, type Range } from '../../functions/core/ranges.js';
import { frontLength, REST_PER_PASS, sweepRanges } from '../../functions/core/sweep-front.js';
import { WindowScan } from '../../functions/sweep/window-scan.js';
import { aRange } from '../helpers/ranges.js';

const LEASE: Lease = { expiresAt: 1, deliveredAt: 0 };
const leased = (start: string) => aRange(start, { leases: new Map([[0, LEASE]]) });
const start = (n: number) => String(1000 + n);

/** A shard of `n` ranges, the first `touched` of them leased from: what a backlog behind a slow consumer is. */
function shard(n: number, touched: number): Range[] {
  return Array.from({ length: n }, (_, i) => (i < touched ? leased(start(i)) : aRange(start(i))));
}

/** A RangeStore over `ranges` that counts the ranges it answers. */
function store(ranges: Range[]) {
  const counted = { read: 0 };
  return {
    counted,
    ranges: {
      commitHint: async () => ranges[0]?.start,
      head: async () => {
        counted.read++;
        return ranges.at(-1);
      },
      from: async (_q: string, _s: string, from: string | undefined, limit: number) => {
        const out = ranges
          .filter((r) => from === undefined || compareSequence(r.start, from) >= 0)
          .slice(0, limit);
        counted.read += out.length;
        return out;
      },
    },
  };
}

describe('the sweep front', () => {
  it('ends a look past the first range that was never leased from', () => {
    const ranges = shard(30, 3);
    expect(frontLength(ranges)).toBe(3 + 1 + RANGES_PER_LOOK);
    expect(frontLength(ranges.slice(0, 3 + RANGES_PER_LOOK))).toBeUndefined();
  });

  it('goes on through finished and wholly leased ranges, and ranges with nothing free', () => {
    const full = aRange(start(1), { failed: new Set(Array.from({ length: 20 }, (_, i) => i)) });
    const ranges = [leased(start(0)), full, ...shard(40, 0).slice(2)];
    expect(frontLength(ranges)).toBe(2 + 1 + RANGES_PER_LOOK);
  });

  it('lists the front, the rest and the head once each, in order', () => {
    const [a, b, c, d] = shard(4, 0) as [Range, Range, Range, Range];
    expect(sweepRanges([a, b], [c, d], d).map((r) => r.start)).toEqual([a.start, b.start, c.start, d.start]);
    expect(sweepRanges([a, b], [], b).map((r) => r.start)).toEqual([a.start, b.start]);
  });
});

describe('WindowScan', () => {
  it('reads as much per pass behind a backlog of 100,000 ranges as behind 100', async () => {
    const reads = [];
    for (const n of [100, 100_000]) {
      const { ranges, counted } = store(shard(n, 2));
      await new WindowScan(ranges).read('q', 's');
      reads.push(counted.read);
    }
    expect(reads[1]).toBe(reads[0]);
    expect(reads[1]).toBeLessThan(2 * 16 + REST_PER_PASS + 2);
  });

  it('reaches every range of the window in turn, and the head each pass', async () => {
    const ranges = shard(200, 2);
    // Leased past the front, as an admission that handed a new range to a waiting long poll left it.
    ranges[150] = leased(start(150));
    const { ranges: fake } = store(ranges);
    const scan = new WindowScan(fake);
    const seen = new Set<string>();
    const passes = Math.ceil(200 / REST_PER_PASS) + 1;
    for (let pass = 0; pass < passes; pass++) {
      const read = await scan.read('q', 's');
      expect(read.at(-1)?.start).toBe(start(199));
      for (const r of read) seen.add(r.start);
    }
    expect(seen.size).toBe(200);
  });

  it('reads the whole window while it is the front', async () => {
    const { ranges } = store(shard(30, 30));
    expect(await new WindowScan(ranges).read('q', 's')).toHaveLength(30);
  });
});
