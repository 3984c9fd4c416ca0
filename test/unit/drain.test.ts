import { describe, expect, it } from 'vitest';
import { drainView, SAMPLE_MAX_AGE_MS } from '../../functions/core/drain.js';

const at = (s: number) => s * 1000;

describe('drainView', () => {
  it('is the backlog over the net ack rate of the last two samples', () => {
    // 60 s apart: 600 produced (10/s), 1,800 acked (30/s): 20/s net, 1,000 left → 50 s.
    const view = drainView(
      1000,
      at(61),
      { at: at(60), produced: 1600, acked: 2800 },
      { at: 0, produced: 1000, acked: 1000 },
    );
    expect(view).toEqual({ state: 'draining', eta_seconds: 50, produce_per_second: 10, ack_per_second: 30 });
  });

  it('is not draining when produce keeps up with acks, or nothing is acked', () => {
    expect(
      drainView(5, at(61), { at: at(60), produced: 60, acked: 60 }, { at: 0, produced: 0, acked: 0 }).state,
    ).toBe('not_draining');
    const stuck = drainView(
      5,
      at(61),
      { at: at(60), produced: 5, acked: 0 },
      { at: 0, produced: 5, acked: 0 },
    );
    expect(stuck).toEqual({
      state: 'not_draining',
      eta_seconds: null,
      produce_per_second: 0,
      ack_per_second: 0,
    });
  });

  it('is empty with no backlog, and unknown without two recent samples', () => {
    expect(drainView(0, at(61), undefined, undefined)).toMatchObject({ state: 'empty', eta_seconds: 0 });
    expect(drainView(3, at(61), { at: at(60), produced: 3, acked: 0 }, undefined).state).toBe('unknown');
    const old = drainView(
      3,
      at(60) + SAMPLE_MAX_AGE_MS + 1,
      { at: at(60), produced: 3, acked: 3 },
      { at: 0, produced: 0, acked: 0 },
    );
    expect(old).toEqual({
      state: 'unknown',
      eta_seconds: null,
      produce_per_second: null,
      ack_per_second: null,
    });
  });
});
