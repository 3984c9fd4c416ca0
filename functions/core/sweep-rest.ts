import type { Range } from './ranges.js';

/**
 * When the sweep may rest (docs/operations.md, "The sweep rests when idle"). A tick of the
 * schedule (once a minute) starts it; it keeps making passes while there is work, and ends its
 * invocation after a pass that found nothing due soon, unless the sweep was armed lately. The
 * work that leaves state for the sweep (a lease, a retry, a delayed message, a job) arms it: a
 * conditional write of the tenant's arm item, at most once per ARM_EVERY_MS per function
 * instance, which wakes a resting sweep at once.
 *
 * Why a recent arm keeps it going: an instance that armed less than ARM_EVERY_MS ago does not
 * write again, so state it leaves meanwhile is covered only by that arm. The sweep rests only
 * when the arm is older than ARM_EVERY_MS + READ_LAG_MS at the start of its pass, so anything
 * such an instance left was written READ_LAG_MS before the pass began and the pass saw it.
 */

/** How often one function instance arms the sweep at most. */
export const ARM_EVERY_MS = 30_000;
/** Longest time for a write to reach the reads of a pass (the index is eventually consistent). */
const READ_LAG_MS = 10_000;
/**
 * What a pass counts as due soon: what the next tick (a minute away, a few seconds late at
 * worst) must not be the first to see.
 */
export const REST_HORIZON_MS = 90_000;

/**
 * Whether the last arm is old enough for a pass that began at `passStart` to let the sweep rest:
 * it does when, besides, the pass found nothing pending.
 */
export function armSettled(armedAt: number | undefined, passStart: number): boolean {
  return armedAt === undefined || armedAt < passStart - ARM_EVERY_MS - READ_LAG_MS;
}

/**
 * Whether a range holds work the sweep must attend to within the horizon: an unfinished lease
 * that runs out, or a retry that comes due. (An entry delivered from its key's hold area has its
 * lease in the key's state: see Sweeper.pending.)
 */
export function rangeNeedsSweep(range: Range, now: number): boolean {
  const soon = now + REST_HORIZON_MS;
  for (const [index, lease] of range.leases)
    if (!range.acked.has(index) && !range.failed.has(index) && lease.expiresAt <= soon) return true;
  for (const [, retry] of range.retrying) if (retry.dueAt <= soon) return true;
  return false;
}
