import type { HistoryRecord } from '../store/messages.js';

/** How stored facts read in API answers: times as ISO strings, absent values as null. */

export const iso = (ms: number | undefined): string => new Date(ms ?? 0).toISOString();

export interface AttemptView {
  attempt: number;
  consumer_id: string | null;
  reason: HistoryRecord['reason'];
  error: string | null;
  delivered_at: string;
  failed_at: string;
}

export function attemptView(h: HistoryRecord): AttemptView {
  return {
    attempt: h.attempt,
    consumer_id: h.consumer_id ?? null,
    reason: h.reason,
    error: h.error ?? null,
    delivered_at: iso(h.delivered_at),
    failed_at: iso(h.failed_at),
  };
}
