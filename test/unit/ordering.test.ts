import { describe, expect, it } from 'vitest';
import { keyedStep } from '../../functions/core/ordering.js';
import { TAKEOVERS_PER_ATTEMPT, takenOverTooOften } from '../../functions/core/ranges.js';

describe('keyedStep: what a Lambda consumer does with a message of a key', () => {
  it('delivers on a free key', () => {
    expect(keyedStep(undefined, 'm-1')).toBe('deliver');
    expect(keyedStep({}, 'm-1')).toBe('deliver');
  });

  it('on a key busy with a retry delivers that retry only, and holds the rest', () => {
    expect(keyedStep({ busy_with: 'm-1' }, 'm-1')).toBe('deliver');
    expect(keyedStep({ busy_with: 'm-1' }, 'm-2')).toBe('hold');
    // The retry goes before the messages held behind it.
    expect(keyedStep({ busy_with: 'm-1', holding: true }, 'm-1')).toBe('deliver');
  });

  it('on a parked key lets the redriven dead message go first, and holds the rest', () => {
    const parked = { parked_at: 1, dead_message_id: 'm-1' };
    expect(keyedStep(parked, 'm-1')).toBe('redriven');
    expect(keyedStep(parked, 'm-2')).toBe('hold');
    expect(keyedStep({ ...parked, holding: true }, 'm-2')).toBe('hold');
  });

  it('on a free key with held messages holds a newer one behind them', () => {
    expect(keyedStep({ holding: true }, 'm-9')).toBe('hold');
  });
});

describe('takenOverTooOften', () => {
  it('gives an entry TAKEOVERS_PER_ATTEMPT deliveries again before one counts as a failed attempt', () => {
    expect(takenOverTooOften(undefined)).toBe(false);
    expect(takenOverTooOften({ takeovers: TAKEOVERS_PER_ATTEMPT })).toBe(false);
    expect(takenOverTooOften({ takeovers: TAKEOVERS_PER_ATTEMPT + 1 })).toBe(true);
  });
});
