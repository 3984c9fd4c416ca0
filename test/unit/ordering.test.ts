import { describe, expect, it } from 'vitest';
import {
  admittedRuns,
  chooseRuns,
  type KeyRun,
  keyedStep,
  keyRuns,
  keyTag,
  runPicks,
} from '../../functions/core/ordering.js';
import { type Range, TAKEOVERS_PER_ATTEMPT, takenOverTooOften } from '../../functions/core/ranges.js';
import { aRange } from '../helpers/ranges.js';

describe('keyedStep: what a Lambda consumer does with a message of a key', () => {
  it('delivers on a free key', () => {
    expect(keyedStep(undefined, 'm-1')).toBe('deliver');
    expect(keyedStep({}, 'm-1')).toBe('deliver');
  });

  it('on a key busy with a retry delivers that retry only, and holds the rest', () => {
    expect(keyedStep({ busy_with: 'm-1' }, 'm-1')).toBe('deliver');
    expect(keyedStep({ busy_with: 'm-1' }, 'm-2')).toBe('hold');
    // The retry goes before the messages held behind it.
    expect(keyedStep({ busy_with: 'm-1', holding: 1 }, 'm-1')).toBe('deliver');
  });

  it('on a parked key lets the redriven dead message go first, and holds the rest', () => {
    const parked = { parked_at: 1, dead_message_id: 'm-1' };
    expect(keyedStep(parked, 'm-1')).toBe('redriven');
    expect(keyedStep(parked, 'm-2')).toBe('hold');
    expect(keyedStep({ ...parked, holding: 1 }, 'm-2')).toBe('hold');
  });

  it('on a free key with held messages holds a newer one behind them', () => {
    expect(keyedStep({ holding: 1 }, 'm-9')).toBe('hold');
  });
});

describe('takenOverTooOften', () => {
  it('gives an entry TAKEOVERS_PER_ATTEMPT deliveries again before one counts as a failed attempt', () => {
    expect(takenOverTooOften(undefined)).toBe(false);
    expect(takenOverTooOften({ takeovers: TAKEOVERS_PER_ATTEMPT })).toBe(false);
    expect(takenOverTooOften({ takeovers: TAKEOVERS_PER_ATTEMPT + 1 })).toBe(true);
  });
});

/** A range of an ordered queue whose entries carry `keys` (one letter a key). */
function keyed(start: string, base: number, keys: string, over: Partial<Range> = {}): Range {
  return aRange(start, { shard: 's', count: keys.length, base, keys: [...keys].map(keyTag), ...over });
}

/** Each run as "<key letter>:<positions>" (a retry's positions marked `r`, a holder candidate `h`). */
function shown(runs: readonly KeyRun[]): string[] {
  const letter = (tag: string) => 'abcdefghxyz'.split('').find((k) => keyTag(k) === tag) ?? '?';
  return runs.map(
    (run) =>
      `${letter(run.tag)}:${run.entries.map((e) => e.range.base + e.index).join(',')}${run.retry ? 'r' : ''}${run.holderOnly ? 'h' : ''}`,
  );
}

describe('keyRuns: what a receiver may lease of an ordered queue', () => {
  const lease = { expiresAt: 10_000, deliveredAt: 0 };

  it("takes each key's first unfinished entry, and nothing of a key behind an unfinished one", () => {
    const r1 = keyed('1', 0, 'abab', { leases: new Map([[0, lease]]), acked: new Set([1]) });
    const r2 = keyed('2', 4, 'cabc');
    // a's first is leased: a waits. b's first is acked: its next (3) goes. c's first is 4.
    expect(shown(keyRuns([r1, r2], 1, 0))).toEqual(['b:3', 'c:4']);
  });

  it('takes up to max_per_key consecutive messages of a key, in order', () => {
    const r = keyed('1', 0, 'aaabaaa');
    expect(shown(keyRuns([r], 10, 0))).toEqual(['a:0,1,2,4,5,6', 'b:3']);
    expect(shown(keyRuns([r], 2, 0))).toEqual(['a:0,1', 'b:3']);
  });

  it('finds every key behind a hot key whatever its backlog', () => {
    const hot = keyed('1', 0, `${'a'.repeat(19)}b`, { leases: new Map([[0, lease]]) });
    const more = keyed('2', 20, 'aaaaaaaaaacaaaaaaaad');
    expect(shown(keyRuns([hot, more], 1, 0))).toEqual(['b:19', 'c:30', 'd:39']);
  });

  it('delivers a retry waiting in place when due, alone, and holds its key until then', () => {
    const waiting = (dueAt: number) =>
      keyed('1', 0, 'aab', { retrying: new Map([[0, { dueAt, attempt: 2 }]]) });
    expect(shown(keyRuns([waiting(5000)], 10, 1000))).toEqual(['b:2']);
    expect(shown(keyRuns([waiting(5000)], 10, 5000))).toEqual(['a:0r', 'b:2']);
  });

  it("offers a blocked key's later free entries as holder candidates", () => {
    const r = keyed('1', 0, 'aaba');
    expect(shown(keyRuns([r], 1, 0, new Set([keyTag('a')])))).toEqual(['a:0', 'b:2', 'a:1h', 'a:3h']);
  });
});

describe('admittedRuns: what an admission may lease as it creates its ranges', () => {
  const lease = { expiresAt: 10_000, deliveredAt: 0 };

  it('takes runs that start in the new ranges, of keys with nothing unfinished in the window and not blocked', () => {
    const window = [keyed('1', 0, 'abc', { leases: new Map([[0, lease]]), acked: new Set([1]) })];
    // a is in flight and c free but unfinished in the window: both wait. b is finished there.
    const fresh = [keyed('2', 3, 'abcdde'), keyed('3', 9, 'df')];
    expect(shown(admittedRuns(window, fresh, 2, 0, new Set([keyTag('e')])))).toEqual([
      'b:4',
      'd:6,7',
      'f:10',
    ]);
    // Nothing before the new ranges at all: every key's first run, up to max_per_key.
    expect(shown(admittedRuns([], fresh, 1, 0, new Set()))).toEqual([
      'a:3',
      'b:4',
      'c:5',
      'd:6',
      'e:8',
      'f:10',
    ]);
  });

  it('leaves a key whose entry waits in a new range until its time, and its later entries', () => {
    const fresh = [keyed('1', 0, 'aab', { retrying: new Map([[0, { dueAt: 5000 }]]) })];
    expect(shown(admittedRuns([], fresh, 10, 1000, new Set()))).toEqual(['b:2']);
  });
});

describe('chooseRuns and runPicks', () => {
  const r1 = keyed('1', 0, 'abcd');
  const r2 = keyed('2', 4, 'aefg');
  const runs = keyRuns([r1, r2], 2, 0);

  it("take the drawn run's range first (round to its first run), then the ranges after it, cutting the last run to what is wanted", () => {
    expect(shown(chooseRuns(runs, 3, () => 0))).toEqual(['a:0,4', 'b:1']);
    // Drawn: d (range 1's last run); then range 1 round to its first, then range 2.
    expect(shown(chooseRuns(runs, 5, () => 3 / 7))).toEqual(['d:3', 'a:0,4', 'b:1', 'c:2']);
    // Drawn: the last run; its range first, then round to the first range.
    expect(shown(chooseRuns(runs, 5, () => 0.99))).toEqual(['g:7', 'e:5', 'f:6', 'a:0,4']);
    expect(chooseRuns(runs, 0)).toEqual([]);
  });

  it('group what was chosen by range, oldest first, for one write each', () => {
    const picks = runPicks(chooseRuns(runs, 4, () => 0));
    expect(picks.map((p) => [p.range.start, p.indexes])).toEqual([
      ['1', [0, 1, 2]],
      ['2', [0]],
    ]);
  });
});
