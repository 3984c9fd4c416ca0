import { describe, expect, it } from 'vitest';
import { BUSY_PER_SHARD, fanOutStep, QUIET_BEFORE_OFF_MS } from '../../functions/core/fan-out-switch.js';

const now = 10 * QUIET_BEFORE_OFF_MS;

describe('busy-time fan-out', () => {
  it('turns a stream on once produce reaches what its passes admit at once, and keeps it on', () => {
    expect(fanOutStep({ state: 'off', perShard: BUSY_PER_SHARD, quietSince: undefined, now })).toEqual({
      action: 'turn-on',
      quietSince: undefined,
    });
    expect(
      fanOutStep({ state: 'off', perShard: BUSY_PER_SHARD - 0.1, quietSince: undefined, now }).action,
    ).toBe('none');
    // Busy again: the quiet start is dropped.
    expect(fanOutStep({ state: 'on', perShard: 50, quietSince: now - 1000, now })).toEqual({
      action: 'none',
      quietSince: undefined,
    });
  });

  it('leaves an idle stream off, with no reading at all (a new sweep)', () => {
    expect(fanOutStep({ state: 'off', perShard: undefined, quietSince: undefined, now }).action).toBe('none');
    expect(fanOutStep({ state: 'off', perShard: 0, quietSince: undefined, now }).action).toBe('none');
  });

  it('takes a consumer still being set up on to the end, even while quiet', () => {
    expect(fanOutStep({ state: 'starting', perShard: 0, quietSince: undefined, now })).toEqual({
      action: 'turn-on',
      quietSince: now,
    });
  });

  it('turns a stream off after a quiet hour, counted from the first quiet reading', () => {
    const first = fanOutStep({ state: 'on', perShard: 1, quietSince: undefined, now });
    expect(first).toEqual({ action: 'none', quietSince: now });
    const later = now + QUIET_BEFORE_OFF_MS - 1;
    expect(fanOutStep({ state: 'on', perShard: 0, quietSince: first.quietSince, now: later })).toEqual({
      action: 'none',
      quietSince: now,
    });
    expect(
      fanOutStep({ state: 'on', perShard: 0, quietSince: first.quietSince, now: now + QUIET_BEFORE_OFF_MS }),
    ).toEqual({ action: 'turn-off', quietSince: undefined });
    // A quiet hour is counted without readings too: a sweep that lost its last totals still drops it.
    expect(
      fanOutStep({ state: 'on', perShard: undefined, quietSince: now, now: now + QUIET_BEFORE_OFF_MS })
        .action,
    ).toBe('turn-off');
  });
});
