import { describe, expect, it } from 'vitest';
import {
  keyedStep,
  type SequencedRecord,
  type SequencerKeyView,
  sequenceKey,
} from '../../functions/core/ordering.js';
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

describe('sequenceKey: what admission does with the records of a key of an ordered pull queue', () => {
  const rec = (n: number, extra: Partial<SequencedRecord> = {}): SequencedRecord => ({
    message_id: `m-${n}`,
    sequence: String(100 + n),
    entry: 1,
    due: true,
    ...extra,
  });
  const fresh: SequencerKeyView = { headDone: true, headAcked: true };

  it('makes the first record of a free key its head and holds the rest', () => {
    const d = sequenceKey(fresh, [rec(1), rec(2), rec(3)]);
    expect(d.steps).toEqual(['head', 'hold', 'hold']);
    expect(d.head?.message_id).toBe('m-1');
    expect(d.holding).toBe(true);
    expect(d.busyWith).toBeUndefined();
  });

  it('holds everything while the head is in flight, the key has held messages, or is parked', () => {
    const head = { message_id: 'm-0', sequence: '100' };
    expect(sequenceKey({ head, headDone: false, headAcked: false }, [rec(1)]).steps).toEqual(['hold']);
    expect(sequenceKey({ ...fresh, holding: 7 }, [rec(1)]).steps).toEqual(['hold']);
    expect(sequenceKey({ ...fresh, parked_at: 1, dead_message_id: 'm-0' }, [rec(1)]).steps).toEqual(['hold']);
  });

  it('lets a retry go first, even past held messages, and releases an acked holder lazily', () => {
    const waiting: SequencerKeyView = {
      busy_with: 'm-0',
      head: { message_id: 'm-0', sequence: '100' },
      headDone: true,
      headAcked: false,
      holding: 3,
    };
    const d = sequenceKey(waiting, [rec(5), rec(0, { entry: 2, sequence: '106' })]);
    expect(d.steps).toEqual(['hold', 'head']);
    expect(d.busyWith).toBe('m-0');
    // Its retry was acked since: the key is open, and the holder goes with the next write.
    const acked = {
      ...waiting,
      holding: undefined,
      headAcked: true,
      head: { message_id: 'm-0', sequence: '106' },
    };
    const next = sequenceKey(acked, [rec(7)]);
    expect(next.steps).toEqual(['head']);
    expect(next.busyWith).toBeNull();
  });

  it('holds a retry of another message while the key is held by a live one', () => {
    const d = sequenceKey({ ...fresh, busy_with: 'm-1' }, [rec(2, { entry: 2 })]);
    expect(d.steps).toEqual(['hold']);
  });

  it('unparks a key for its redriven dead letter, which goes first', () => {
    const parked = { ...fresh, parked_at: 1, dead_message_id: 'm-1', holding: 2 };
    const d = sequenceKey(parked, [rec(3), rec(1, { entry: 3 })]);
    expect(d.steps).toEqual(['hold', 'head']);
    expect(d.unpark).toBe(true);
    expect(d.busyWith).toBe('m-1');
  });

  it('keeps a delayed message in the delay store holding its key', () => {
    const d = sequenceKey(fresh, [rec(1, { due: false }), rec(2)]);
    expect(d.steps).toEqual(['delay', 'hold']);
    expect(d.busyWith).toBe('m-1');
    expect(d.head).toBeUndefined();
  });

  it('replays what an earlier try decided for records up to `sequenced`', () => {
    const after: SequencerKeyView = {
      head: { message_id: 'm-1', sequence: '101' },
      headDone: false,
      headAcked: false,
      busy_with: 'm-4',
      holding: 1,
      sequenced: '104',
      delayed: '104',
    };
    const d = sequenceKey(after, [rec(1), rec(2), rec(4, { due: false }), rec(5)]);
    expect(d.steps).toEqual(['head', 'hold', 'delay', 'hold']);
  });

  it('records which record it delayed, and replays a delay only for that one', () => {
    const open: SequencerKeyView = { headDone: true, headAcked: false };
    expect(sequenceKey(open, [rec(4, { due: false })]).delayed).toBe('104');
    // m-2 was held, then taken from the hold area (it holds the key): held it stays.
    const taken: SequencerKeyView = {
      head: { message_id: 'm-1', sequence: '101' },
      headDone: true,
      headAcked: true,
      busy_with: 'm-2',
      holding: 1,
      sequenced: '102',
    };
    const d = sequenceKey(taken, [rec(1), rec(2)]);
    expect(d.steps).toEqual(['head', 'hold']);
    expect(d.delayed).toBeUndefined();
  });
});
