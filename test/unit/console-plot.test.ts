import { describe, expect, it } from 'vitest';
import { perSecond } from '../../console/format.js';
import { GAP_MS, HOUR_MS, keep, rates, type Sample, values } from '../../console/history.js';
import {
  ageMax,
  BOX,
  highest,
  linePath,
  MIN_SPAN_MS,
  niceMax,
  position,
  summary,
  windowOf,
} from '../../console/plot-scale.js';

const T0 = Date.UTC(2026, 11, 5, 12, 0, 0);
const sample = (s: number, fields: Partial<Sample> = {}): Sample => ({
  t: T0 + s * 1000,
  ready: 0,
  in_flight: 0,
  dlq: 0,
  ...fields,
});

describe("the console's plots: their scale", () => {
  it('tops at the next 1, 2 or 5 times a power of ten, 1 for nothing', () => {
    expect([0, 1, 3, 7, 10, 11, 20, 21, 0.3, 0.04, 1234].map(niceMax)).toEqual([
      1, 1, 5, 10, 10, 20, 20, 50, 0.5, 0.05, 2000,
    ]);
    expect(niceMax(Number.NaN)).toBe(1);
  });

  it('tops ages at a round minute or hour', () => {
    expect([0, 3, 45, 61, 3000, 3601, 90_000].map(ageMax)).toEqual([5, 5, 60, 120, 3600, 7200, 172_800]);
  });

  it('spans from the first point to the latest, at least a minute', () => {
    const line = (ts: number[]) => [{ name: 'x', tone: '', points: ts.map((t) => ({ t, v: 1 })) }];
    expect(windowOf(line([T0]))).toEqual({ from: T0 - MIN_SPAN_MS, to: T0 });
    expect(windowOf(line([T0, T0 + 600_000]))).toEqual({ from: T0, to: T0 + 600_000 });
    expect(windowOf([])).toBeUndefined();
  });

  it('draws the oldest point at the left, the latest at the right, 0 at the bottom and the top at the top', () => {
    const w = { from: T0, to: T0 + 60_000 };
    expect(position({ t: T0, v: 0 }, w, 10)).toEqual({ x: 1, y: BOX.bottom });
    expect(position({ t: T0 + 60_000, v: 10 }, w, 10)).toEqual({ x: BOX.width - 1, y: BOX.top });
    expect(position({ t: T0 + 30_000, v: 5 }, w, 10)).toEqual({
      x: BOX.width / 2,
      y: (BOX.top + BOX.bottom) / 2,
    });
  });

  it('breaks the line where a value is missing, and leaves out what is before the window', () => {
    const w = { from: T0, to: T0 + 4000 };
    const points = [
      { t: T0 - 1000, v: 9 },
      { t: T0, v: 0 },
      { t: T0 + 1000, v: 10 },
      { t: T0 + 2000, v: null },
      { t: T0 + 3000, v: 5 },
      { t: T0 + 4000, v: 5 },
    ];
    const d = linePath(points, w, 10);
    expect(d.match(/[ML]/g)).toEqual(['M', 'L', 'M', 'L']);
    expect(d.startsWith(`M1 ${BOX.bottom} L`)).toBe(true);
    expect(d.endsWith(`L${BOX.width - 1} ${(BOX.top + BOX.bottom) / 2}`)).toBe(true);
    expect(highest([{ name: 'x', tone: '', points }], w)).toBe(10);
  });

  it('says its window and each line’s latest value', () => {
    const plot = {
      title: 'Messages a second',
      format: perSecond,
      series: [
        { name: 'produced', tone: '', points: [{ t: T0 + 60_000, v: 0.5 }] },
        { name: 'acked', tone: '', points: [{ t: T0 + 60_000, v: null }] },
      ],
    };
    expect(summary(plot, { from: T0, to: T0 + 60_000 })).toBe(
      'Messages a second from 2026-12-05T12:00:00.000Z to 2026-12-05T12:01:00.000Z; latest: produced 0.5/s, acked not known yet',
    );
  });
});

describe("the console's plots: their samples", () => {
  it('keep an hour, drop one that comes within a second of the last, and restart if the clock goes back', () => {
    let kept: Sample[] = [];
    for (const s of [0, 3, 3.5, 6]) kept = keep(kept, sample(s));
    expect(kept.map((s) => s.t - T0)).toEqual([0, 3000, 6000]);
    kept = keep(kept, sample(HOUR_MS / 1000 + 3));
    expect(kept.map((s) => s.t - T0)).toEqual([3000, 6000, HOUR_MS + 3000]);
    expect(keep(kept, sample(1))).toEqual([sample(1)]);
  });

  it('turn counters into rates a second, broken across a gap or a counter that went down', () => {
    const samples = [
      sample(0, { acked: 10 }),
      sample(2, { acked: 16 }),
      sample(4, { acked: 16 }),
      sample(4 + GAP_MS / 1000 + 1, { acked: 100 }),
      sample(6 + GAP_MS / 1000, { acked: 4 }),
      sample(8 + GAP_MS / 1000, { acked: 8 }),
    ];
    expect(rates(samples, (s) => s.acked).map((p) => p.v)).toEqual([3, 0, null, null, 2]);
    expect(rates(samples.slice(0, 1), (s) => s.acked)).toEqual([]);
  });

  it('break a figure’s line across a gap', () => {
    const samples = [sample(0, { ready: 1 }), sample(3, { ready: 2 }), sample(3 + GAP_MS / 1000 + 1)];
    expect(values(samples, (s) => s.ready).map((p) => p.v)).toEqual([1, 2, null, 0]);
    expect(values(samples, (s) => s.oldest).map((p) => p.v)).toEqual([null, null, null, null]);
  });
});
