import type { QueueConfig, TenantConfig } from './config.js';

/**
 * How many of a queue's receives wait at once (docs/access-and-quotas.md, "Long polls"). A long
 * poll holds an invocation of the api function for up to 20 s, so a queue whose consumers poll
 * an empty queue hard could hold the function's whole concurrency; each queue gets
 * `max_waiting_receives` places to wait, and a receive that finds no place answers then with
 * what its look found.
 *
 * Places are counted in the table per epoch of the longest wait (POLL_EPOCH_MS), taken by a
 * receive that has waited FREE_WAIT_MS and would wait on, and given back when it ends. A receive waits at most an epoch, so those waiting at once took their places
 * in this epoch or the last: each epoch has half the places. A place whose receive never gave it
 * back (its instance ended mid-wait) is gone with its epoch, 40 s at most.
 */

/**
 * A receive waits this long without a place: what such short waits hold at once is bounded by
 * the queue's consume route (a second of its requests), and the receives of consumers that keep
 * up mostly end sooner, so they never pay for a place.
 */
export const FREE_WAIT_MS = 1000;

/** The longest wait a receive asks for (`wait_seconds` ≤ 20). */
export const POLL_EPOCH_MS = 20_000;

export function pollEpoch(now: number): number {
  return Math.floor(now / POLL_EPOCH_MS);
}

/** Places an epoch has: two epochs' together are the queue's `max_waiting_receives`, rounded up to even. */
export function placesPerEpoch(config: Pick<QueueConfig, 'max_waiting_receives'>): number {
  return Math.ceil(config.max_waiting_receives / 2);
}

/** Lambda's concurrent executions per account and region, by default (a quota that can be raised). */
export const ACCOUNT_CONCURRENCY = 1_000;

/**
 * A line for synth when the queues' places together pass the account's concurrency: their long
 * polls alone could then hold every execution the account has, the stack's other calls throttled.
 */
export function waitingReceivesFindings(tenant: TenantConfig): string[] {
  const total = Object.values(tenant.queues).reduce((n, q) => n + q.max_waiting_receives, 0);
  if (total <= ACCOUNT_CONCURRENCY) return [];
  return [
    `the queues' max_waiting_receives let ${total} receives wait at once, past Lambda's ${ACCOUNT_CONCURRENCY} ` +
      'concurrent executions for the whole account in a region by default: lower max_waiting_receives on ' +
      'the quiet queues (Workers on the wake channel do not wait in receives), or ask for more ' +
      '(Service Quotas: AWS Lambda, "Concurrent executions")',
  ];
}
