import { describe, expect, it } from 'vitest';
import type { Envelope } from '../../functions/core/envelope.js';
import { OutsideRetentionError } from '../../functions/core/errors.js';
import { admissionId, isReplayable, replayCopy, replayWindow } from '../../functions/core/replay-policy.js';

const NOW = Date.parse('2026-12-01T12:00:00Z');
const original: Envelope = {
  v: 1,
  message_id: 'm-1',
  queue: 'orders',
  key: 'k',
  produced_at: '2026-12-01T10:00:00.000Z',
  enqueued_at: '2026-12-01T10:00:00.000Z',
  attempt: 1,
  entry: 1,
  deliver_after: '2026-12-01T10:05:00.000Z',
  payload: { n: 1 },
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
};
const window = { from: NOW - 3_600_000, to: NOW };

describe('replayWindow', () => {
  it('ends at now at the latest, and refuses a start the log no longer keeps', () => {
    expect(replayWindow({ from: '2026-12-01T11:00:00Z', to: '2026-12-02T00:00:00Z' }, 24, NOW)).toEqual({
      from: NOW - 3_600_000,
      to: NOW,
    });
    expect(() => replayWindow({ from: '2026-11-30T12:04:00Z' }, 24, NOW)).toThrow(OutsideRetentionError);
    expect(replayWindow({ from: '2026-11-30T12:06:00Z' }, 24, NOW).from).toBe(
      Date.parse('2026-11-30T12:06:00Z'),
    );
    expect(() => replayWindow({ from: '2026-12-01T11:00:00Z', to: '2026-12-01T10:00:00Z' }, 24, NOW)).toThrow(
      /from must be before to/,
    );
  });
});

describe('isReplayable', () => {
  it("takes a producer's first entry in the window, and what the filter names", () => {
    expect(isReplayable(original, NOW - 60_000, window, {})).toBe(true);
    expect(isReplayable(original, NOW - 2 * 3_600_000, window, {})).toBe(false);
    expect(isReplayable(original, NOW + 1, window, {})).toBe(false);
    expect(isReplayable(original, NOW, window, { keys: ['k'] })).toBe(true);
    expect(isReplayable(original, NOW, window, { keys: ['other'] })).toBe(false);
    expect(isReplayable(original, NOW, window, { message_ids: ['m-2'] })).toBe(false);
  });

  it('passes over retries, wakes, consumer copies and earlier replays', () => {
    for (const other of [
      { entry: 2 },
      { wake: true as const },
      { for: 'billing' },
      { replay: 'earlier' },
      { from: { shard: 's', range: 'r', index: 0 } },
    ])
      expect(isReplayable({ ...original, ...other }, NOW, window, {})).toBe(false);
  });
});

describe('replayCopy', () => {
  it('is a new life of the id, due now, attempt 1, marked with its replay, for a consumer when asked', () => {
    const copy = replayCopy({ ...original, server_id: true }, 'r-1', NOW, 'billing');
    expect(copy).toMatchObject({
      message_id: 'm-1',
      key: 'k',
      payload: { n: 1 },
      traceparent: original.traceparent,
      produced_at: '2026-12-01T12:00:00.000Z',
      attempt: 1,
      entry: 1,
      replay: 'r-1',
      for: 'billing',
    });
    expect(copy.deliver_after).toBeUndefined();
    expect(copy.server_id).toBeUndefined();
    expect(admissionId(copy)).toBe('m-1#replay#r-1');
    expect(admissionId(original)).toBe('m-1');
    expect(admissionId({ ...original, server_id: true })).toBeUndefined();
  });
});
