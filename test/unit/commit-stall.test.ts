import { describe, expect, it } from 'vitest';
import { commitStall, sameMarks } from '../../functions/core/commit-stall.js';

describe('commitStall', () => {
  it('counts from the first look that found the commit point where it still is', () => {
    const first = commitStall({}, { a: 'r1/0', b: 'r9/3' }, 1000);
    expect(first.stalledSeconds).toEqual({ a: 0, b: 0 });
    const later = commitStall(first.marks, { a: 'r1/0', b: 'r9/4' }, 61_000);
    expect(later.stalledSeconds).toEqual({ a: 60, b: 0 });
    expect(later.marks).toEqual({ a: { at: 'r1/0', since: 1000 }, b: { at: 'r9/4', since: 61_000 } });
  });

  it('is 0 for a shard with nothing unfinished, and forgets its mark', () => {
    const { stalledSeconds, marks } = commitStall({ a: { at: 'r1/0', since: 0 } }, { a: undefined }, 600_000);
    expect(stalledSeconds).toEqual({ a: 0 });
    expect(marks).toEqual({});
  });

  it('compares marks whatever the order of their shards', () => {
    const a = { x: { at: 'r/1', since: 5 }, y: { at: 'r/2', since: 6 } };
    expect(sameMarks(a, { y: { at: 'r/2', since: 6 }, x: { at: 'r/1', since: 5 } })).toBe(true);
    expect(sameMarks(a, { x: { at: 'r/1', since: 5 } })).toBe(false);
    expect(sameMarks(a, { x: { at: 'r/1', since: 5 }, y: { at: 'r/3', since: 6 } })).toBe(false);
  });
});
