import { describe, expect, it } from 'vitest';
import { RecentRate } from '../../functions/core/recent-rate.js';

describe('RecentRate', () => {
  it('counts what was added in the last second, weighing the second before by its overlap', () => {
    const rate = new RecentRate();
    expect(rate.add(10, 5_000)).toBe(10);
    expect(rate.add(5, 5_900)).toBe(15);
    // A quarter into the next second: 3/4 of the previous bucket's 15 still counts.
    expect(rate.add(2, 6_250)).toBeCloseTo(2 + 15 * 0.75);
    // Two seconds on: nothing of the old buckets.
    expect(rate.add(1, 8_100)).toBe(1);
  });
});
