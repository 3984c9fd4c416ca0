import { describe, expect, it } from 'vitest';
import { InvalidRangeError } from '../../functions/core/errors.js';
import { sumUsage, totalsAt, usageBetween } from '../../functions/core/usage.js';
import { usageRange } from '../../functions/core/usage-range.js';
import { nextUsageSample, type RollupSample, type UsageSample } from '../../functions/core/usage-sample.js';

/** The usage's arithmetic: samples of running totals, the ones nearest a range's ends, their difference. */

const HOUR = 3_600_000;

function sample(at: number, fields: Partial<UsageSample> = {}, origin = false): RollupSample {
  return {
    ...nextUsageSample(undefined, { at, totals: {}, storedBytes: 0, dlqBytes: 0 }),
    ...fields,
    ...(origin ? { origin: true } : {}),
  };
}

describe('a sample', () => {
  it('integrates what the queue held since the last one by the trapezoid rule, the DLQ apart', () => {
    const first = nextUsageSample(undefined, {
      at: 0,
      totals: { produced: 3 },
      storedBytes: 100,
      dlqBytes: 0,
    });
    expect(first).toMatchObject({
      produced: 3,
      log_bytes: 100,
      dlq_bytes: 0,
      log_byte_ms: 0,
      dlq_byte_ms: 0,
    });
    const next = nextUsageSample(first, {
      at: 1000,
      totals: { produced: 5, requests_ack: 2 },
      storedBytes: 300,
      dlqBytes: 100,
    });
    expect(next).toMatchObject({
      produced: 5,
      requests_ack: 2,
      log_bytes: 200,
      dlq_bytes: 100,
      log_byte_ms: ((100 + 200) / 2) * 1000,
      dlq_byte_ms: ((0 + 100) / 2) * 1000,
    });
  });
});

describe('the totals at a time', () => {
  const a = sample(10 * HOUR, { produced: 10 });
  const b = sample(11 * HOUR, { produced: 30 });

  it('are those of the nearest sample, before or after', () => {
    expect(totalsAt(10 * HOUR + 20 * 60_000, [a, b])).toMatchObject({ at: a.at, totals: { produced: 10 } });
    expect(totalsAt(10 * HOUR + 40 * 60_000, [b, a])).toMatchObject({ at: b.at, totals: { produced: 30 } });
    expect(totalsAt(12 * HOUR, [a, b]).totals.produced).toBe(30);
  });

  it("are zero before a queue's first sample and with none at all, but not before a later one", () => {
    expect(totalsAt(9 * HOUR, [{ ...a, origin: true }, b])).toEqual({
      at: 9 * HOUR,
      totals: expect.any(Object),
    });
    expect(totalsAt(9 * HOUR, [{ ...a, origin: true }]).totals.produced).toBe(0);
    // The latest sample may be the first too: its rollup's copy says so.
    expect(totalsAt(9 * HOUR, [{ ...a, origin: true }, a]).totals.produced).toBe(0);
    expect(totalsAt(9 * HOUR, []).totals.produced).toBe(0);
    // Rollups older than those kept: the oldest kept starts the range.
    expect(totalsAt(9 * HOUR, [a, b])).toMatchObject({ at: a.at, totals: { produced: 10 } });
  });
});

describe('usage between two samples', () => {
  it('is their difference, requests by kind with their total, priced', () => {
    const start = sample(0, { produced: 1, requests_produce: 1, requests_other: 4, throttled: 1 });
    const end = sample(HOUR, {
      produced: 11,
      produced_bytes: 5000,
      acked: 6,
      acked_bytes: 3000,
      requests_produce: 3,
      requests_receive: 5,
      requests_other: 4,
      throttled: 2,
      log_byte_ms: 1024 ** 3 * HOUR,
    });
    const usage = usageBetween(start, end);
    expect(usage).toMatchObject({
      produced: { messages: 10, bytes: 5000 },
      consumed: { messages: 6, bytes: 3000 },
      stored_gb_hours: { log: 1, dlq: 0 },
      requests: { produce: 2, receive: 5, ack: 0, other: 0, total: 7, throttled: 1 },
    });
    expect(usage.cost_usd.requests).toBeCloseTo(7 * 1.2e-6, 12);
    expect(usage.cost_usd.storage).toBeCloseTo(0.25 / 730, 12);
    expect(sumUsage([usage, usage]).requests.total).toBe(14);
    expect(sumUsage([]).requests.total).toBe(0);
  });
});

describe('a usage range', () => {
  const now = Date.parse('2026-12-01T00:00:00Z');

  it('is refused reversed, over 93 days, or starting in the future', () => {
    const refused = (from: string, to: string) => () => usageRange(from, to, now);
    expect(refused('2026-11-02T00:00:00Z', '2026-11-01T00:00:00Z')).toThrow(InvalidRangeError);
    expect(refused('2026-08-01T00:00:00Z', '2026-11-03T00:00:00Z')).toThrow(/at most 93 days/);
    expect(refused('2026-12-02T00:00:00Z', '2026-12-03T00:00:00Z')).toThrow(/future/);
    expect(usageRange('2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z', now)).toEqual({
      from: Date.parse('2026-11-01T00:00:00Z'),
      to: now,
    });
  });
});
