import { mapLimit } from '../core/async.js';
import type { QueueConfig } from '../core/config.js';
import { payloadBytes } from '../core/envelope.js';
import { afterFailure, type FailureReason } from '../core/retry-policy.js';
import { type HeldDelivery, toDeliver } from '../delivery/held-delivery.js';
import type { KeyHolds } from '../store/key-holds.js';
import type { KeyStates } from '../store/key-states.js';
import type { RangeStore } from '../store/ranges.js';

/**
 * The sweep's part in an ordered pull queue's hold areas, per shard: a held delivery whose lease
 * ran out is a failed attempt; what a crash left between an ack's or a failure's writes is
 * finished (delivery/held-delivery.ts says how an ack and a failure go).
 */

export interface HeldSweepDeps {
  keys: KeyStates;
  holds: KeyHolds;
  ranges: RangeStore;
  held: HeldDelivery;
  now?: () => number;
}

/** A marker whose key holds nothing is removed once it is this old (a key is marked just before it holds). */
const STALE_MARKER_MS = 60_000;

export class HeldSweep {
  constructor(private readonly deps: HeldSweepDeps) {}

  /** Answers the attempts failed. */
  async sweep(queue: string, config: QueueConfig, shard: string): Promise<number> {
    const markers = await this.deps.holds.marked(queue, shard);
    if (!markers.length) return 0;
    const states = await this.deps.keys.getMany(
      queue,
      markers.map((m) => m.key),
    );
    const now = this.deps.now?.() ?? Date.now();
    // A marker whose key holds nothing, left by an emptying that stopped between its two writes.
    // Old only: admission marks a key just before it sets its token.
    const stale = markers.filter(
      (m) => states.get(m.key)?.holding === undefined && (m.token ?? 0) < (now - STALE_MARKER_MS) * 1000,
    );
    await mapLimit(stale, 8, (m) => this.deps.holds.unmark(queue, shard, m.key, m.token ?? 0));
    const failed = await mapLimit([...states.values()], 8, async (state) => {
      const holder = state.busy_with ?? (state.parked_at !== undefined ? state.dead_message_id : undefined);
      if (holder === undefined || (state.lease_expires_at ?? 0) > now) return false;
      const [held] = await this.deps.holds.first(queue, state.key, 1);
      const leftover = state.lease_expires_at !== undefined && state.lease_gen !== undefined;
      // An ack that ended the lease and stopped before it was finished: finished, not failed.
      const acking =
        state.acking === state.lease_gen && state.busy_with === holder ? state.acking : undefined;
      if (held?.envelope.message_id !== holder) {
        // Its hold item goes only once its ack is written where it was admitted (a sweep that
        // read the key before the ack's first write removes it): the key is free again.
        if (acking !== undefined) await this.deps.keys.finishAck(queue, state.key, holder, acking);
        // A held message's lease whose message left the hold area (acked, then the release failed
        // or stopped): nothing of it is in flight, so the key is free again.
        else if (leftover && state.busy_with === holder) {
          const release = { release: true, lease: 'expired' } as const;
          await this.deps.keys.endHeld(queue, state.key, holder, state.lease_gen as number, now, release);
        }
        return false;
      }
      const at = await this.deps.ranges.entryAt(queue, held.shard, held);
      if (at && acking !== undefined) {
        const bytes = payloadBytes(held.envelope);
        const item = { key: state.key, sequence: held.sequence, bytes };
        await this.deps.held.finishAck(queue, holder, acking, item, at.range, at.index);
        return false;
      }
      if (at && !toDeliver(at)) {
        // Handled before a crash, or put back by a late replay: the hold item goes, and the key
        // too if the message was acked (a failed one keeps it for its retry or parks it).
        if (at.range.acked.has(at.index) && state.lease_gen !== undefined && state.busy_with === holder)
          await this.deps.keys.endHeld(queue, state.key, holder, state.lease_gen, now, {
            release: true,
            lease: 'expired',
          });
        await this.deps.holds.remove(queue, state.key, held.sequence);
        return false;
      }
      // Parked behind it, or kept for its retry, by a failure that stopped before it was written;
      // or its lease ran out.
      const reason: FailureReason = state.parked_at !== undefined ? 'non_retryable' : 'lease_expired';
      if (leftover) {
        const expected = afterFailure(config, { attempt: held.envelope.attempt, reason, now });
        const ended = { release: false, lease: 'expired' } as const;
        if (!(await this.deps.keys.endHeld(queue, state.key, holder, state.lease_gen as number, now, ended)))
          return false;
        if (expected.kind === 'dead') await this.deps.keys.park(queue, state.key, holder, held.shard, now);
      }
      return (await this.deps.held.fail(queue, config, held, state, { reason, entry: at })) !== undefined;
    });
    return failed.filter(Boolean).length;
  }
}
