/**
 * When the sweep's next pass starts: an interval after the last one started, so a retry that came
 * due just after a pass looked waits an interval for the next, not an interval plus a pass. A pass
 * that ran longer than that is followed after a quarter interval, not at once: a slow pass (a busy
 * tenant, a loaded machine) does not turn into passes back to back.
 */
export function nextPassIn(intervalMs: number, passMs: number): number {
  return Math.max(intervalMs - passMs, intervalMs / 4);
}
