import type { LeaseqClient } from '../client/client.js';

/** What every page is drawn with. */
export interface Page {
  client: LeaseqClient;
  /** Aborted when the reader leaves the page: its polls stop and late answers are dropped. */
  signal: AbortSignal;
}

/** Seconds between refreshes of the figures. */
export const REFRESH_MS = 3000;

/** Runs `tick` now and then `ms` after each run ends, until the page is left or it answers false. */
export function every(signal: AbortSignal, ms: number, tick: () => Promise<unknown>): void {
  const run = async () => {
    if (signal.aborted) return;
    const more = await tick();
    if (more !== false && !signal.aborted) setTimeout(run, ms);
  };
  void run();
}
