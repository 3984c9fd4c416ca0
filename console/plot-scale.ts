import { time } from './format.js';
import type { Point } from './history.js';

/**
 * Where the plots' lines go (console/plot.ts draws them): the window of times, the scale's top,
 * each point's place in the drawing, the path through them, and what a plot says in words.
 */

export interface Series {
  /** What the line is ("ready", "acked"), in its legend and its label. */
  name: string;
  /** Its colour: a class of style.css (`tone-accent`, `tone-ok`, `tone-warn`, `tone-bad`, `tone-alt`). */
  tone: string;
  points: Point[];
}

export interface Plot {
  title: string;
  series: Series[];
  /** How a value reads: a count, an age, a rate. */
  format: (v: number) => string;
  /** The scale's top for the highest value: `niceMax` unless given. */
  top?: (v: number) => number;
}

/** The times drawn, ms since the epoch. */
export interface Window {
  from: number;
  to: number;
}

/** The drawing's size in its own units (the viewBox); it scales to the width it is given. */
export const BOX = { width: 560, height: 132, top: 18, bottom: 112 } as const;
/** A short history still spans this much, its line growing from the right. */
export const MIN_SPAN_MS = 60_000;

/** The smallest 1, 2 or 5 times a power of ten at or above `v`; 1 for nothing. */
export function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(v));
  const step = [1, 2, 5, 10].find((m) => m * power >= v * (1 - 1e-9)) ?? 10;
  return Number((step * power).toPrecision(12));
}

const AGE_STEPS = [5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14_400, 43_200, 86_400];

/** `niceMax` for seconds: a round minute or hour, days past a day. */
export function ageMax(seconds: number): number {
  return AGE_STEPS.find((s) => s >= seconds) ?? 86_400 * niceMax(seconds / 86_400);
}

/** The times the lines span: the latest point's, back to the earliest (at least `MIN_SPAN_MS`). */
export function windowOf(series: readonly Series[]): Window | undefined {
  const times = series.flatMap((s) => s.points.map((p) => p.t));
  if (!times.length) return undefined;
  const to = Math.max(...times);
  return { from: Math.min(to - MIN_SPAN_MS, ...times), to };
}

/** The highest value of the lines within the window. */
export function highest(series: readonly Series[], w: Window): number {
  let max = 0;
  for (const s of series)
    for (const p of s.points) if (p.t >= w.from && p.v !== null) max = Math.max(max, p.v);
  return max;
}

/** Where a point is drawn: x across the window, y from the bottom (0) to the top (`top`). */
export function position(p: { t: number; v: number }, w: Window, top: number): { x: number; y: number } {
  const span = Math.max(1, w.to - w.from);
  const x = 1 + ((p.t - w.from) / span) * (BOX.width - 2);
  const y = BOX.bottom - (Math.min(p.v, top) / top) * (BOX.bottom - BOX.top);
  return { x: round(x), y: round(y) };
}

/** The line's SVG path: a move to the first point of each run, lines to the rest; null breaks it. */
export function linePath(points: readonly Point[], w: Window, top: number): string {
  let d = '';
  let drawing = false;
  for (const p of points) {
    if (p.v === null || p.t < w.from) {
      drawing = false;
      continue;
    }
    const { x, y } = position({ t: p.t, v: p.v }, w, top);
    d += `${d ? ' ' : ''}${drawing ? 'L' : 'M'}${x} ${y}`;
    drawing = true;
  }
  return d;
}

/** The line's latest point with a value. */
export function latest(points: readonly Point[]): { t: number; v: number } | undefined {
  const p = points.at(-1);
  return p && p.v !== null ? { t: p.t, v: p.v } : undefined;
}

/** What the plot says, for its `aria-label`: its window, then each line's latest value. */
export function summary(plot: Plot, w: Window): string {
  const now = plot.series
    .map((s) => {
      const last = latest(s.points);
      return `${s.name} ${last ? plot.format(last.v) : 'not known yet'}`;
    })
    .join(', ');
  return `${plot.title} from ${time(new Date(w.from))} to ${time(new Date(w.to))}; latest: ${now}`;
}

const round = (n: number) => Math.round(n * 10) / 10;
