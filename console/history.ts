import type { ConsumerStats, QueueStats } from '../client/types.js';

/**
 * The last hour of a queue's figures, sampled by the page from the stats it polls anyway: no
 * server keeps them (CloudWatch holds the long history on AWS), so the history starts when the
 * console is opened. Kept per queue (or Lambda consumer) in the tab's `sessionStorage`
 * (console/session.ts), so a reload or a change of tool keeps it; gone with the tab, as the key is.
 */

/** One look at the figures; the `_total`s are cumulative counters, turned into rates by `rates`. */
export interface Sample {
  /** When the answer came, ms since the epoch. */
  t: number;
  ready: number;
  in_flight: number;
  dlq: number;
  /** The queue's: a Lambda consumer's stats carry no age, produced, acked or redelivered. */
  oldest?: number;
  produced?: number;
  acked?: number;
  redelivered?: number;
  /** A Lambda consumer's. */
  nacked?: number;
  dead_lettered?: number;
}

/** A value at a time; `v` null where the line breaks (the page was closed, a counter restarted). */
export interface Point {
  t: number;
  v: number | null;
}

export const HOUR_MS = 3_600_000;
/** Samples closer than this to the last one are not kept: a rate over 50 ms is noise. */
export const MIN_SPACING_MS = 1000;
/**
 * Two samples further apart than this are not joined: the page was closed, or asleep. Above a
 * minute, which is how often a browser runs a hidden tab's timers.
 */
export const GAP_MS = 90_000;

/** The sample of a stats answer that came at `t`: a queue's `depth` is what is ready in it. */
export function sampleOf(s: QueueStats | ConsumerStats, t: number): Sample {
  const common = { t, in_flight: s.in_flight, dlq: s.dlq_depth };
  if ('consumer' in s)
    return { ...common, ready: s.ready, nacked: s.nacked_total, dead_lettered: s.dead_lettered_total };
  return {
    ...common,
    ready: s.depth,
    oldest: s.oldest_unacked_age_seconds,
    produced: s.produced_total,
    acked: s.acked_total,
    redelivered: s.redelivered_total,
  };
}

/** `samples` with `next` added, less those more than an hour older than it. */
export function keep(samples: readonly Sample[], next: Sample): Sample[] {
  const last = samples.at(-1);
  // A clock set back starts the history again rather than drawing backwards.
  if (last && next.t < last.t) return [next];
  const kept = samples.filter((s) => s.t >= next.t - HOUR_MS);
  if (last && next.t - last.t < MIN_SPACING_MS) return kept;
  return [...kept, next];
}

/** A figure as a line, broken where two samples are too far apart. */
export function values(samples: readonly Sample[], pick: (s: Sample) => number | undefined): Point[] {
  const out: Point[] = [];
  samples.forEach((s, i) => {
    const prev = samples[i - 1];
    if (prev && s.t - prev.t > GAP_MS) out.push({ t: prev.t, v: null });
    out.push({ t: s.t, v: pick(s) ?? null });
  });
  return out;
}

/**
 * A cumulative counter as a rate a second between successive samples, at the later one. No rate
 * across a gap, nor where the counter went down (its counts restarted): the line breaks there.
 */
export function rates(samples: readonly Sample[], pick: (s: Sample) => number | undefined): Point[] {
  const out: Point[] = [];
  for (let i = 1; i < samples.length; i++) {
    const prev = samples[i - 1] as Sample;
    const s = samples[i] as Sample;
    const a = pick(prev);
    const b = pick(s);
    const ok = a !== undefined && b !== undefined && b >= a && s.t > prev.t && s.t - prev.t <= GAP_MS;
    out.push({ t: s.t, v: ok ? ((b - a) * 1000) / (s.t - prev.t) : null });
  }
  return out;
}
