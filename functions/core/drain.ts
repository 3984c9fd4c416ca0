/**
 * Will the backlog drain, and when, or will it outlive the retention? From two samples of
 * a queue's totals a minute apart (the sweep takes one with its gauges): the produce and ack rates
 * over that minute, and the backlog ÷ (ack rate − produce rate) when acks outpace produce.
 */

export interface TotalsSample {
  /** Epoch ms. */
  at: number;
  produced: number;
  acked: number;
}

export interface DrainView {
  /** `unknown` until two recent samples exist (the sweep takes one a minute). */
  state: 'empty' | 'draining' | 'not_draining' | 'unknown';
  eta_seconds: number | null;
  produce_per_second: number | null;
  ack_per_second: number | null;
}

/** Samples older than this say the sweep stopped taking them: no rate is claimed from them. */
export const SAMPLE_MAX_AGE_MS = 5 * 60_000;

export function drainView(
  backlog: number,
  now: number,
  latest: TotalsSample | undefined,
  previous: TotalsSample | undefined,
): DrainView {
  const seconds = latest && previous ? (latest.at - previous.at) / 1000 : 0;
  const recent = latest !== undefined && now - latest.at <= SAMPLE_MAX_AGE_MS;
  if (!latest || !previous || seconds <= 0 || !recent) {
    return {
      state: backlog === 0 ? 'empty' : 'unknown',
      eta_seconds: backlog === 0 ? 0 : null,
      produce_per_second: null,
      ack_per_second: null,
    };
  }
  const produce = Math.max(0, latest.produced - previous.produced) / seconds;
  const ack = Math.max(0, latest.acked - previous.acked) / seconds;
  const rates = { produce_per_second: round(produce), ack_per_second: round(ack) };
  if (backlog === 0) return { state: 'empty', eta_seconds: 0, ...rates };
  if (ack <= produce) return { state: 'not_draining', eta_seconds: null, ...rates };
  return { state: 'draining', eta_seconds: Math.ceil(backlog / (ack - produce)), ...rates };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
