import type { QueueConfig } from './config.js';

/** Lease arithmetic (docs/contract.md, "Guarantees"): every expiry is clamped to the max total lease. */

export function maxLeaseExpiry(config: Pick<QueueConfig, 'max_lease_seconds'>, deliveredAt: number): number {
  return deliveredAt + config.max_lease_seconds * 1000;
}

/** Expiry of a lease taken or extended at `now` for `seconds`, never past the max total lease. */
export function leaseExpiry(
  config: Pick<QueueConfig, 'max_lease_seconds'>,
  deliveredAt: number,
  now: number,
  seconds: number,
): number {
  return Math.min(now + seconds * 1000, maxLeaseExpiry(config, deliveredAt));
}

/** The lease a receive takes at `now`: delivered then, for `seconds`, held by `consumerId`. */
export function receiveLease(
  config: Pick<QueueConfig, 'max_lease_seconds'>,
  now: number,
  seconds: number,
  consumerId: string,
): { deliveredAt: number; expiresAt: number; consumerId: string } {
  return { deliveredAt: now, expiresAt: leaseExpiry(config, now, now, seconds), consumerId };
}
