import { describe, expect, it } from 'vitest';
import {
  ARM_EVERY_MS,
  armSettled,
  REST_HORIZON_MS,
  rangeNeedsSweep,
} from '../../functions/core/sweep-rest.js';
import { aRange } from '../helpers/ranges.js';

describe('when the sweep may rest', () => {
  const now = 1_000_000_000;

  it('not while an arm is recent enough to cover state an instance left without arming again', () => {
    expect(armSettled(undefined, now)).toBe(true);
    // An instance that armed at `armedAt` writes again only ARM_EVERY_MS later: a pass must begin
    // long enough after that for what it left meanwhile to be in the pass's reads.
    expect(armSettled(now - ARM_EVERY_MS, now)).toBe(false);
    expect(armSettled(now - ARM_EVERY_MS - 9_999, now)).toBe(false);
    expect(armSettled(now - ARM_EVERY_MS - 10_001, now)).toBe(true);
  });

  it('not while a range has an unfinished lease or a retry due within the horizon', () => {
    const lease = (expiresAt: number) => ({ expiresAt, deliveredAt: now - 1000 });
    expect(rangeNeedsSweep(aRange('1'), now)).toBe(false);
    expect(rangeNeedsSweep(aRange('1', { leases: new Map([[0, lease(now + REST_HORIZON_MS)]]) }), now)).toBe(
      true,
    );
    // A lease that runs out later is the next ticks' to find, within the horizon.
    expect(
      rangeNeedsSweep(aRange('1', { leases: new Map([[0, lease(now + REST_HORIZON_MS + 1)]]) }), now),
    ).toBe(false);
    // An acked or failed entry's lease is over, wherever its expiry is.
    const done = { leases: new Map([[0, lease(now)]]) };
    expect(rangeNeedsSweep(aRange('1', { ...done, acked: new Set([0]) }), now)).toBe(false);
    expect(rangeNeedsSweep(aRange('1', { ...done, failed: new Set([0]) }), now)).toBe(false);
    expect(rangeNeedsSweep(aRange('1', { retrying: new Map([[3, { dueAt: now + 10_000 }]]) }), now)).toBe(
      true,
    );
    expect(
      rangeNeedsSweep(aRange('1', { retrying: new Map([[3, { dueAt: now + REST_HORIZON_MS + 1 }]]) }), now),
    ).toBe(false);
    // Held for its key (a parked one's, say): the key's state has its lease, if any.
    expect(rangeNeedsSweep(aRange('1', { held: new Set([2]) }), now)).toBe(false);
  });
});
