import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compareSequence,
  dealOffers,
  dueRetries,
  entryStatus,
  expiredEntries,
  freeEntries,
  gapCap,
  isFinished,
  type Lease,
  leaseFrontier,
  passOnMark,
  pickEntries,
  type Range,
  rangeSizes,
  readPassOnMark,
  shareEntries,
  stuckEntries,
  stuckRetries,
  waitsInRange,
  windowSize,
} from '../../functions/core/ranges.js';
import { aRange } from '../helpers/ranges.js';

/** The lease layer's rules, with time passed in: no AWS. */

function range(start: string, over: Partial<Range> = {}): Range {
  return aRange(start, { count: 5, ...over });
}

const lease = (expiresAt: number): Lease => ({ expiresAt, deliveredAt: expiresAt - 1000 });

describe('entry status', () => {
  const r = range('100', {
    leases: new Map([
      [0, lease(2000)],
      [1, lease(2000)],
      [2, lease(500)],
      [3, lease(500)],
    ]),
    acked: new Set([0]),
    failed: new Set([3]),
  });

  it('follows lease, expiry and the finished sets at a given time', () => {
    expect([0, 1, 2, 3, 4].map((i) => entryStatus(r, i, 1000))).toEqual([
      'acked',
      'leased',
      'expired',
      'failed',
      'free',
    ]);
    expect(entryStatus(r, 1, 2000)).toBe('expired');
  });

  it('leases each entry once: only entries never leased are free', () => {
    expect(freeEntries(r)).toEqual([4]);
    expect(expiredEntries(r, 1000)).toEqual([2]);
    expect(isFinished(r)).toBe(false);
    expect(isFinished(range('1', { count: 2, acked: new Set([0]), failed: new Set([1]) }))).toBe(true);
  });

  it('counts a held entry acked after its hold once: the range is not finished while another is leased', () => {
    const held = range('1', { count: 2, acked: new Set([0]), failed: new Set([0]) });
    expect(isFinished(held)).toBe(false);
  });
});

describe('window and ranges', () => {
  it('is head minus commit point, finished entries above the commit point included', () => {
    const low = range('1', { base: 40, count: 20 });
    const head = range('9', { base: 100, count: 7 });
    expect(windowSize(head, low)).toBe(67);
    expect(windowSize(head, undefined)).toBe(0);
    expect(windowSize(undefined, undefined)).toBe(0);
  });

  it('cuts a batch into ranges of at most 20', () => {
    expect(rangeSizes(0)).toEqual([]);
    expect(rangeSizes(45)).toEqual([20, 20, 5]);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5000 }), (n) => {
        const sizes = rangeSizes(n);
        expect(sizes.reduce((a, b) => a + b, 0)).toBe(n);
        expect(sizes.every((s) => s >= 1 && s <= 20)).toBe(true);
      }),
    );
  });

  it('finds the lease frontier: the first range with a free entry, else the last one read', () => {
    const taken = range('1', { count: 1, leases: new Map([[0, lease(9)]]) });
    const open = range('2');
    expect(leaseFrontier([taken, open])).toBe('2');
    expect(leaseFrontier([taken])).toBe('1');
    expect(leaseFrontier([])).toBeUndefined();
  });
});

describe('the gap cap', () => {
  it('is half the window, at least one entry', () => {
    expect(gapCap({ window_size: 10_000 })).toBe(5000);
    expect(gapCap({ window_size: 1 })).toBe(1);
  });

  it('finds live leases further than the cap below the head, not expired or finished ones', () => {
    const low = range('1', {
      base: 0,
      count: 5,
      leases: new Map([
        [0, lease(2000)],
        [1, lease(500)],
        [2, lease(2000)],
        [3, lease(2000)],
      ]),
      acked: new Set([2]),
    });
    const head = range('9', { base: 5, count: 10, leases: new Map([[0, lease(2000)]]) });
    // Head at 15, cap 11: entries below 4 are stuck; 1 expired, 2 acked, 3 is at 3 < 4.
    expect(stuckEntries([low, head], 11, 1000, 0).map((s) => [s.range.start, s.index])).toEqual([
      ['1', 0],
      ['1', 3],
    ]);
    expect(stuckEntries([low, head], 15, 1000, 0)).toEqual([]);
    // Delivered at 1000: not slow yet at 1000 when a lease must be held 500 ms, slow at 1600.
    expect(stuckEntries([low, head], 11, 1000, 500)).toEqual([]);
    expect(stuckEntries([low, head], 11, 1600, 500).map((s) => [s.range.start, s.index])).toEqual([
      ['1', 0],
      ['1', 3],
    ]);
  });
});

describe('picking entries to lease', () => {
  it('takes up to `want` free entries from as few ranges as it can, from a random free entry on', () => {
    const a = range('1', { leases: new Map([[1, lease(9)]]) });
    const b = range('2');
    const c = range('3', { count: 2 });
    // Eleven free entries to start from: a's four, b's five, c's two.
    expect(pickEntries([a, b, c], 6, () => 0).map((p) => [p.range.start, p.indexes])).toEqual([
      ['1', [0, 2, 3, 4]],
      ['2', [0, 1]],
    ]);
    // From the second range: it alone fills a receive of 5.
    expect(pickEntries([a, b, c], 5, () => 0.4).map((p) => [p.range.start, p.indexes])).toEqual([
      ['2', [0, 1, 2, 3, 4]],
    ]);
    // From the last, wrapping round.
    expect(pickEntries([a, b, c], 4, () => 0.9).map((p) => [p.range.start, p.indexes])).toEqual([
      ['3', [0, 1]],
      ['1', [0, 2]],
    ]);
    expect(pickEntries([a, b, c], 100, () => 0.99).flatMap((p) => p.indexes)).toHaveLength(11);
    expect(pickEntries([], 5)).toEqual([]);
  });

  it('shares the free entries of new ranges out in order to receivers woken together, none twice', () => {
    const a = range('1', { failed: new Set([1]) });
    const b = range('6', { count: 3 });
    const shares = shareEntries([a, b], [3, 3, 10]).map((share) =>
      share.map((p) => [p.range.start, p.indexes]),
    );
    expect(shares).toEqual([
      [['1', [0, 2, 3]]],
      [
        ['1', [4]],
        ['6', [0, 1]],
      ],
      [['6', [2]]],
    ]);
    expect(shareEntries([b], [2, 5, 1]).map((share) => share.flatMap((p) => p.indexes))).toEqual([
      [0, 1],
      [2],
      [],
    ]);
  });

  it('deals offered entries to waiting receivers in order, each within what it asks and its byte budget', () => {
    const offers = [0, 1, 2, 3, 4, 5].map((index) => ({ slot: index < 4 ? 0 : 1, index, bytes: 100 }));
    offers[3] = { slot: 0, index: 3, bytes: 5000 };
    const dealt = dealOffers(offers, [
      { wants: 2, maxBytes: 1000 },
      { wants: 10, maxBytes: 150 },
      { wants: 10, maxBytes: 10 },
      { wants: 10, maxBytes: 1000 },
      { wants: 10, maxBytes: 1000 },
    ]).map((d) => d.map((o) => o.index));
    // The second stops at its budget; the third takes one over it (a receive answers one message
    // whatever its size); the fourth takes the rest; nothing is left for the fifth.
    expect(dealt).toEqual([[0, 1], [2], [3], [4, 5], []]);
    fc.assert(
      fc.property(
        fc.array(fc.nat(300), { maxLength: 40 }),
        fc.array(fc.record({ wants: fc.integer({ min: 1, max: 10 }), maxBytes: fc.nat(1000) }), {
          maxLength: 6,
        }),
        (sizes, takers) => {
          const all = sizes.map((bytes, index) => ({ slot: 0, index, bytes }));
          const out = dealOffers(all, takers);
          const flat = out.flat().map((o) => o.index);
          // In order, none twice, each within its count and (past its first) its budget.
          expect(flat).toEqual(flat.map((_, i) => i));
          out.forEach((d, i) => {
            expect(d.length).toBeLessThanOrEqual(takers[i]?.wants ?? 0);
            if (d.length > 1)
              expect(d.reduce((n, o) => n + o.bytes, 0)).toBeLessThanOrEqual(takers[i]?.maxBytes ?? 0);
          });
        },
      ),
    );
  });

  it("deals a key's run to one receiver only: what it leaves of the run goes to nobody", () => {
    const offer = (index: number, run: number) => ({ slot: 0, index, bytes: 100, run });
    const offers = [offer(0, 0), offer(1, 0), offer(2, 0), offer(3, 1), offer(4, 2), offer(5, 2)];
    const dealt = dealOffers(offers, [
      { wants: 2, maxBytes: 1000 },
      { wants: 2, maxBytes: 1000 },
      { wants: 10, maxBytes: 150 },
    ]).map((d) => d.map((o) => o.index));
    // The first cuts run 0 after two; its third entry is nobody's. The third's budget cuts run 2.
    expect(dealt).toEqual([[0, 1], [3, 4], []]);
    expect(
      dealOffers(offers, [
        { wants: 10, maxBytes: 250 },
        { wants: 10, maxBytes: 1000 },
      ]).map((d) => d.map((o) => o.index)),
    ).toEqual([
      [0, 1],
      [3, 4, 5],
    ]);
  });

  it('starts anywhere in a range, so two receivers of one range take different entries unless they drew the same', () => {
    const r = range('1', { count: 20 });
    const first = pickEntries([r], 10, () => 0.2);
    const second = pickEntries([r], 10, () => 0.7);
    expect(first.map((p) => [p.range.start, p.indexes])).toEqual([['1', [4, 5, 6, 7, 8, 9, 10, 11, 12, 13]]]);
    // From entry 14 to the end, then round to the range's start before the next range.
    expect(second.map((p) => [p.range.start, p.indexes])).toEqual([
      ['1', [0, 1, 2, 3, 14, 15, 16, 17, 18, 19]],
    ]);
    const top = pickEntries([range('1', { count: 14 }), range('2')], 10, () => 0.5);
    expect(top.map((p) => [p.range.start, p.indexes])).toEqual([['1', [0, 1, 2, 3, 4, 9, 10, 11, 12, 13]]]);
  });

  it('never picks an entry twice nor one that is not free', () => {
    fc.assert(
      fc.property(
        fc.array(fc.subarray([0, 1, 2, 3, 4]), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 40 }),
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        (leasedPerRange, want, random) => {
          const ranges = leasedPerRange.map((leased, i) =>
            range(String(i + 1), { leases: new Map(leased.map((j) => [j, lease(9)])) }),
          );
          const picks = pickEntries(ranges, want, () => random);
          const taken = picks.flatMap((p) => p.indexes.map((i) => `${p.range.start}/${i}`));
          expect(new Set(taken).size).toBe(taken.length);
          expect(taken.length).toBe(Math.min(want, ranges.flatMap(freeEntries).length));
          for (const p of picks) for (const i of p.indexes) expect(entryStatus(p.range, i, 0)).toBe('free');
        },
      ),
    );
  });
});

describe('retries that wait in their ranges', () => {
  const waiting = (dueAt: number) => ({ dueAt });
  const r = range('1', {
    base: 100,
    retrying: new Map([
      [1, waiting(500)],
      [2, waiting(1500)],
    ]),
    leases: new Map([[0, lease(2000)]]),
  });

  it('wait only on an unordered queue, and only when due within a lease', () => {
    const config = { ordered: false, lease_seconds: 30 };
    expect(waitsInRange(config, 30_000, 0)).toBe(true);
    expect(waitsInRange(config, 30_001, 0)).toBe(false);
    // An ordered queue's retry waits in place whatever its delay: it stays first of its key.
    expect(waitsInRange({ ...config, ordered: true }, 3_600_000, 0)).toBe(true);
  });

  it('are neither free nor finished, and come due at their time', () => {
    expect([1, 2].map((i) => entryStatus(r, i, 1000))).toEqual(['retrying', 'retrying']);
    expect(freeEntries(r)).toEqual([3, 4]);
    expect(isFinished(range('2', { count: 1, retrying: new Map([[0, waiting(1)]]) }))).toBe(false);
    expect(dueRetries(r, 1000)).toEqual([1]);
    expect(dueRetries(r, 1500)).toEqual([1, 2]);
    expect(expiredEntries(r, 1000)).toEqual([]);
  });

  it('are moved out by the gap cap like a stuck lease', () => {
    const head = range('9', { base: 200, count: 20 });
    expect(stuckRetries([r, head], 100).map((s) => [s.range.start, s.index])).toEqual([
      ['1', 1],
      ['1', 2],
    ]);
    expect(stuckRetries([r, head], 119)).toEqual([]);
  });

  it('name the retry entry that finished them by a mark that also says when it was appended', () => {
    const mark = passOnMark(1_700_000_000_123, '49601234');
    expect(mark.length).toBeLessThan(16);
    const read = readPassOnMark(mark);
    expect(read.appendedAt).toBe(1_700_000_000_000);
    expect(read.names('49601234')).toBe(true);
    expect(read.names('49601235')).toBe(false);
  });
});

describe('sequence numbers', () => {
  it('sequence numbers compare as numbers', () => {
    expect(compareSequence('9', '10')).toBeLessThan(0);
    expect(compareSequence('11', '10')).toBeGreaterThan(0);
    expect(compareSequence('10', '10')).toBe(0);
  });
});
