import { describe, expect, it } from 'vitest';
import { AdmittedSignal } from '../../functions/admission/admitted-signal.js';
import type { Pick, Range } from '../../functions/core/ranges.js';

/** Which of `waiters` (in the order they started waiting) have woken by the next tick. */
async function woken(waits: Promise<unknown>[]): Promise<boolean[]> {
  const flags = waits.map(() => false);
  waits.forEach((w, i) => void w.then(() => (flags[i] = true)));
  await new Promise((r) => setImmediate(r));
  return flags;
}

describe('AdmittedSignal', () => {
  it('wakes the oldest waiters until what they ask for covers the new entries', async () => {
    const signal = new AdmittedSignal();
    const waits = [10, 10, 10, 10].map((wants) => signal.wait('q', 0, wants, 60_000));
    signal.notify('q', 15);
    expect(await woken(waits)).toEqual([true, true, false, false]);
    signal.notify('q', 1);
    expect(await woken(waits)).toEqual([true, true, true, false]);
    signal.notify('q', 100);
    expect(await woken(waits)).toEqual([true, true, true, true]);
  });

  it('hands each waiter woken its own share of the entries written, and none to one that timed out', async () => {
    const signal = new AdmittedSignal();
    const range = {
      shard: 'shardId-000000000000',
      start: '7',
      last: '26',
      count: 20,
      base: 0,
      enqueuedAt: 0,
      segment: { id: '7', offset: 0, store: 'ddb' },
      leases: new Map(),
      acked: new Set<number>(),
      failed: new Set<number>(),
      held: new Set<number>(),
      retrying: new Map(),
      passedOn: new Map(),
    } satisfies Range;
    const [first, second, asleep] = [10, 10, 10].map((wants) => signal.wait('q', 0, wants, 60_000));
    const timed = signal.wait('q', 0, 1, 5);
    expect(await timed).toEqual([]);
    signal.notify('q', 20, [range]);
    const indexes = async (share: Promise<readonly Pick[]> | undefined) =>
      (await share)?.flatMap((p) => p.indexes);
    expect(await indexes(first)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await indexes(second)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    signal.notify('q', 1);
    expect(await asleep).toEqual([]);
  });

  it('does not wait when an admission came during the look that preceded the wait', async () => {
    const signal = new AdmittedSignal();
    const seen = signal.seen('q');
    signal.notify('q', 1);
    const late = signal.wait('q', seen, 1, 60_000);
    const fresh = signal.wait('q', signal.seen('q'), 1, 60_000);
    expect(await woken([late, fresh])).toEqual([true, false]);
  });

  it('wakes nobody of another queue, and a waiter on its own after its time', async () => {
    const signal = new AdmittedSignal();
    const other = signal.wait('other', 0, 1, 60_000);
    const timed = signal.wait('q', 0, 1, 20);
    signal.notify('q-2', 5);
    expect(await woken([other, timed])).toEqual([false, false]);
    await timed;
    signal.notify('other', 1);
    expect(await woken([other])).toEqual([true]);
  });
});
