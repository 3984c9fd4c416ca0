import type { TotalsSample } from './drain.js';
import { REQUEST_KINDS, requestCounter } from './request-kinds.js';

/**
 * A queue's usage as running totals, sampled by the sweep with the drain rates' totals (about once
 * a minute): usage over a range is the difference of two samples (core/usage.ts). Counts come from
 * the queue's counters; what the queue holds is integrated from sample to sample (byte·ms).
 */

/** Running totals: they only grow, so any two samples give what happened between them. */
export const USAGE_COUNTERS = [
  'produced',
  'produced_bytes',
  'acked',
  'acked_bytes',
  ...REQUEST_KINDS.map(requestCounter),
  'throttled',
  /** Unconsumed bytes of the log side held, integrated over time (byte·ms). */
  'log_byte_ms',
  /** Dead letters' bytes held, integrated over time (byte·ms). */
  'dlq_byte_ms',
] as const;
export type UsageCounter = (typeof USAGE_COUNTERS)[number];

export type UsageSample = TotalsSample &
  Record<UsageCounter, number> & {
    /** What the queue held at `at`, unconsumed on the log side and in its DLQs (bytes). */
    log_bytes: number;
    dlq_bytes: number;
  };

/** A stored sample; `origin` marks a queue's first, before which it counted nothing. */
export type RollupSample = UsageSample & { origin?: boolean };

/** How long the hourly rollups are kept (their TTL): a year's bills, and a month's margin. */
export const USAGE_RETENTION_DAYS = 400;

export function hourOf(ms: number): number {
  return Math.floor(ms / 3_600_000);
}

/** What the sweep reads at a sample: the queue's totals, and what it holds. */
export interface UsageReading {
  at: number;
  totals: Partial<Record<string, number>>;
  /** The queue's stored bytes (its slowest reader's; dead letters included). */
  storedBytes: number;
  /** Bytes of dead letters held by the queue and its consumers. */
  dlqBytes: number;
}

/**
 * The next sample after `previous` (none: the queue's first). Held bytes are integrated by the
 * trapezoid rule between the two samples: exact while they change steadily, an estimate otherwise.
 */
export function nextUsageSample(previous: UsageSample | undefined, reading: UsageReading): UsageSample {
  const dlq = Math.max(0, reading.dlqBytes);
  const log = Math.max(0, reading.storedBytes - dlq);
  const ms = previous ? Math.max(0, reading.at - previous.at) : 0;
  const counts = Object.fromEntries(
    USAGE_COUNTERS.map((name) => [name, Math.max(0, Number(reading.totals[name] ?? 0))]),
  ) as Record<UsageCounter, number>;
  counts.log_byte_ms = (previous?.log_byte_ms ?? 0) + ((previous?.log_bytes ?? log) + log) * (ms / 2);
  counts.dlq_byte_ms = (previous?.dlq_byte_ms ?? 0) + ((previous?.dlq_bytes ?? dlq) + dlq) * (ms / 2);
  return { ...counts, at: reading.at, log_bytes: log, dlq_bytes: dlq };
}

/** A stored sample, its fields missing when written before they were kept: read as zero. */
export function usageSampleOf(item: Record<string, unknown>): UsageSample | undefined {
  if (typeof item.at !== 'number') return undefined;
  const field = (name: string) => Number(item[name] ?? 0) || 0;
  return {
    ...(Object.fromEntries(USAGE_COUNTERS.map((name) => [name, field(name)])) as Record<
      UsageCounter,
      number
    >),
    at: item.at,
    log_bytes: field('log_bytes'),
    dlq_bytes: field('dlq_bytes'),
  };
}
