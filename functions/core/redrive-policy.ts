/** Redrive rules (docs/contract.md, "Dead letters and operations"): which dead letters a job takes, and how fast. */

export interface RedriveFilterSpec {
  message_ids?: string[];
  error_contains?: string;
  dead_after?: string;
  dead_before?: string;
}

export interface DeadLetterFacts {
  message_id: string;
  dead_at: number;
  /** The error text of every failed attempt. */
  errors: readonly string[];
}

export function matchesFilter(dead: DeadLetterFacts, filter: RedriveFilterSpec): boolean {
  if (filter.message_ids?.length && !filter.message_ids.includes(dead.message_id)) return false;
  if (filter.dead_after && dead.dead_at <= Date.parse(filter.dead_after)) return false;
  if (filter.dead_before && dead.dead_at >= Date.parse(filter.dead_before)) return false;
  if (filter.error_contains) {
    const needle = filter.error_contains.toLowerCase();
    if (!dead.errors.some((e) => e.toLowerCase().includes(needle))) return false;
  }
  return true;
}

/** Whether matching needs each message's history (its error texts). */
export function needsHistory(filter: RedriveFilterSpec): boolean {
  return Boolean(filter.error_contains);
}

/**
 * The job's token bucket: `rate` tokens a second from the job's start, so what moved never
 * runs ahead of `rate × elapsed`. A few seconds' worth may bank while a pass runs late, so a
 * slow pass does not lower the rate; no more, so a job that waited (a busy sweep) does not burst.
 */
const BANK_SECONDS = 5;

export function refill(credit: number, lastRunAt: number, now: number, rate: number): number {
  return Math.min(Math.max(1, rate * BANK_SECONDS), credit + (rate * Math.max(0, now - lastRunAt)) / 1000);
}
