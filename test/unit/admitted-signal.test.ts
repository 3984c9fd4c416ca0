import { describe, expect, it } from 'vitest';
import { AdmittedSignal, type Handoff, type LeaseTerms } from '../../functions/admission/admitted-signal.js';
import type { Range } from '../../functions/core/ranges.js';
import type { SegmentEntry } from '../../functions/store/segments.js';
import { aRange } from '../helpers/ranges.js';

/** Which of `waiters` (in the order they started waiting) have woken by the next tick. */
async function woken(waits: Promise<unknown>[]): Promise<boolean[]> {
  const flags = waits.map(() => false);
  waits.forEach((w, i) => void w.then(() => (flags[i] = true)));
  await new Promise((r) => setImmediate(r));
  return flags;
}

function terms(wants: number, consumerId = 'w', maxBytes = 1000): LeaseTerms {
  return { wants, maxBytes, lease: (now) => ({ deliveredAt: now, expiresAt: now + 30_000, consumerId }) };
}

function range(start: string, count = 20): Range {
  return aRange(start, { count });
}

const entryOf = (slot: number, index: number): SegmentEntry =>
  ({ sequence: `${slot}/${index}`, envelope: {} }) as unknown as SegmentEntry;

const leasedOf = async (h: Promise<Handoff> | undefined) =>
  (await h)?.leased.map((l) => [l.range.start, l.index, l.entry.sequence]);

describe('AdmittedSignal', () => {
  it('wakes the oldest waiters until what they ask for covers the new entries', async () => {
    const signal = new AdmittedSignal();
    const waits = [10, 10, 10, 10].map((wants) => signal.wait('q', 0, terms(wants), 60_000));
    signal.notify('q', 15);
    expect(await woken(waits)).toEqual([true, true, false, false]);
    signal.notify('q', 1);
    expect(await woken(waits)).toEqual([true, true, true, false]);
    signal.notify('q', 100);
    expect(await woken(waits)).toEqual([true, true, true, true]);
  });

  it('hands each waiter woken its own share of the entries written, and none to one that timed out', async () => {
    const signal = new AdmittedSignal();
    const [first, second, asleep] = [10, 10, 10].map((wants) => signal.wait('q', 0, terms(wants), 60_000));
    const timed = signal.wait('q', 0, terms(1), 5);
    expect(await timed).toEqual({ leased: [], share: [] });
    signal.notify('q', 20, [range('7')]);
    const indexes = async (h: Promise<Handoff> | undefined) => (await h)?.share.flatMap((p) => p.indexes);
    expect(await indexes(first)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await indexes(second)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    signal.notify('q', 1);
    expect(await asleep).toEqual({ leased: [], share: [] });
  });

  it('leases the new entries to the oldest waiters with their own terms, and hands over what was written', async () => {
    const signal = new AdmittedSignal();
    const [first, second, third] = [
      signal.wait('q', 0, terms(2, 'a'), 60_000),
      signal.wait('q', 0, terms(10, 'b'), 60_000),
      signal.wait('q', 0, terms(10, 'c'), 60_000),
    ];
    const offers = [0, 1, 2].map((index) => ({ slot: 0, index, bytes: 10 }));
    offers.push({ slot: 1, index: 0, bytes: 10 });
    const reservation = signal.reserve('q', offers, 1000);
    expect(reservation?.count).toBe(4);
    expect([...(reservation?.leases(0) ?? [])].map(([i, l]) => [i, l.consumerId, l.deliveredAt])).toEqual([
      [0, 'a', 1000],
      [1, 'a', 1000],
      [2, 'b', 1000],
    ]);
    expect([...(reservation?.leases(1) ?? [])].map(([i, l]) => [i, l.consumerId])).toEqual([[0, 'b']]);
    // Reserved waiters wait for the write; the third was not needed and waits on.
    expect(await woken([first, second, third])).toEqual([false, false, false]);
    // The second range was not written (another admitter's was there): only what was is handed.
    reservation?.settle([range('5'), undefined], entryOf);
    expect(await leasedOf(first)).toEqual([
      ['5', 0, '0/0'],
      ['5', 1, '0/1'],
    ]);
    expect(await leasedOf(second)).toEqual([['5', 2, '0/2']]);
    expect(await woken([third])).toEqual([false]);
    // Nobody waiting, or nothing offered: no reservation.
    expect(signal.reserve('other', offers, 1000)).toBeUndefined();
    expect(signal.reserve('q', [], 1000)).toBeUndefined();
  });

  it('keeps a reserved waiter past its time until its leases are handed to it', async () => {
    const signal = new AdmittedSignal();
    const waiting = signal.wait('q', 0, terms(1), 5);
    const reservation = signal.reserve('q', [{ slot: 0, index: 3, bytes: 1 }], 0);
    await new Promise((r) => setTimeout(r, 20));
    expect(await woken([waiting])).toEqual([false]);
    reservation?.settle([range('9')], entryOf);
    expect(await leasedOf(waiting)).toEqual([['9', 3, '0/3']]);
    // A range that was not written: woken with nothing, to look.
    const lost = signal.wait('q', 0, terms(1), 60_000);
    signal.reserve('q', [{ slot: 0, index: 0, bytes: 1 }], 0)?.settle([undefined], entryOf);
    expect(await lost).toEqual({ leased: [], share: [] });
  });

  it('does not wait when an admission came during the look that preceded the wait', async () => {
    const signal = new AdmittedSignal();
    const seen = signal.seen('q');
    signal.notify('q', 1);
    const late = signal.wait('q', seen, terms(1), 60_000);
    const fresh = signal.wait('q', signal.seen('q'), terms(1), 60_000);
    expect(await woken([late, fresh])).toEqual([true, false]);
  });

  it('wakes nobody of another queue, nor for entries all leased, and a waiter on its own after its time', async () => {
    const signal = new AdmittedSignal();
    const other = signal.wait('other', 0, terms(1), 60_000);
    const timed = signal.wait('q', 0, terms(1), 20);
    signal.notify('q-2', 5);
    signal.notify('q', 0);
    expect(await woken([other, timed])).toEqual([false, false]);
    await timed;
    signal.notify('other', 1);
    expect(await woken([other])).toEqual([true]);
  });
});
