import type { Logger } from '@aws-lambda-powertools/logger';
import type { QueueConfig } from '../core/config.js';
import type { Envelope } from '../core/envelope.js';
import { keyedStep } from '../core/ordering.js';
import { takenOverTooOften } from '../core/ranges.js';
import { retentionTtls } from '../core/retention.js';
import { afterFailure, type FailureReason, type Outcome } from '../core/retry-policy.js';
import type { RangeFailures } from '../delivery/range-failures.js';
import type { HeldMessage, KeyHolds } from '../store/key-holds.js';
import type { KeyState, KeyStates } from '../store/key-states.js';
import type { RangeStore } from '../store/ranges.js';
import type { Invocation, Located } from './invocation.js';

/**
 * Per-key order for a Lambda consumer of an ordered queue on the lease layer
 * (docs/lambda-consumers.md, "Ordered queues"). The event source hands a shard's records over in
 * log order, one invocation per shard at a time, and every message of a key is in one shard, so an
 * invocation runs a key's records one after another and nobody else writes the key meanwhile (but
 * the sweep, a skip or a redrive, each with a conditional write on the key). Nothing is written per
 * key on the way of a message that does not fail. When one fails, its key is marked first (busy
 * with its retry, or parked behind it dead), then the failure is written; the key's later messages
 * then move to its hold area in order (their entries finished, so the shard goes on) and come out
 * of it, in order, once the key is free again: after the retry's ack, in the same invocation, or on
 * a wake record.
 */

export interface KeyedDeliveryDeps {
  namespace: string;
  config: QueueConfig;
  keys: KeyStates;
  holds: KeyHolds;
  ranges: RangeStore;
  failures: RangeFailures;
  logger: Logger;
}

/** Held messages read from the hold area at a time. */
const HOLD_PAGE = 10;

export class KeyedDelivery {
  constructor(
    private readonly deps: KeyedDeliveryDeps,
    private readonly inv: Invocation,
    private readonly shard: string,
    /** Taken over from crashed invocations too often: failed instead of delivered (core/ranges.ts). */
    private readonly tooOften: (l: Located) => boolean,
  ) {}

  /**
   * A key's records of the batch, in log order, then its hold area if the key is free. `state` is
   * the key as read for this batch; it is kept current here as this invocation changes it.
   */
  async runKey(entries: readonly Located[], state: KeyState): Promise<void> {
    for (const [i, l] of entries.entries()) {
      if (!this.inv.mayStart()) {
        this.inv.unfinished.push(...entries.slice(i));
        return;
      }
      // A key's later records must not overtake one that is left to the retry.
      if (!(await this.inv.run(l, () => this.one(l, state)))) {
        this.inv.unfinished.push(...entries.slice(i + 1));
        return;
      }
    }
    try {
      await this.drain(state);
    } catch (err) {
      // What is left of the hold area waits for the next wake (the sweep's, at the latest).
      this.inv.halted = true;
      this.deps.logger.error('AWS call failed while delivering held messages', {
        key: state.key,
        error: (err as Error).message,
      });
    }
  }

  /** One leased entry of the key: delivered, or moved to the hold area. True when it is to be acked. */
  private async one(l: Located, state: KeyState): Promise<boolean> {
    const id = l.envelope.message_id;
    const step = keyedStep(state, id);
    if (step === 'hold') {
      await this.hold(l, state);
      return false;
    }
    if (step === 'redriven') {
      // Its redrive put it back before unparking the key: it goes first, holding the key.
      await this.deps.keys.unpark(this.deps.namespace, state.key, state.dead_message_id as string, id);
      Object.assign(state, { busy_with: id, parked_at: undefined, dead_message_id: undefined });
    }
    const failLive = (f: { reason: FailureReason; error?: string; retryAfterSeconds?: number }) =>
      this.fail(state, l.envelope, f, () =>
        this.deps.failures.fail(
          this.deps.config,
          { queue: this.deps.namespace, ...l, lease: this.inv.leaseView() },
          { ...f, lease: 'live' },
          Date.now(),
        ),
      );
    if (this.tooOften(l)) {
      await failLive({ reason: 'lease_expired' });
      return false;
    }
    const handled = await this.inv.deliver(l.envelope, failLive);
    if (!handled || state.busy_with !== id) return handled;
    // The key's holder: acked before the key is released, so a crash after the release never
    // leaves it to be delivered again behind the messages the key then lets go.
    await this.inv.ackOne(l);
    await this.released(state, id);
    return false;
  }

  /** Into the hold area behind what is there: the key first, then the message, then its entry finished. */
  private async hold(l: Located, state: KeyState): Promise<void> {
    const { keys, holds, ranges, namespace, config } = this.deps;
    if (!state.holding) state.holding = await keys.setHolding(namespace, state.key);
    // A retry's entry points at its payload: the hold area keeps the payload itself.
    const envelope = await this.inv.resolve(l.envelope);
    const held = {
      key: state.key,
      shard: this.shard,
      sequence: l.sequence,
      position: l.range.base + l.index,
    };
    await holds.put(
      namespace,
      [{ ...held, envelope }],
      retentionTtls(config, Date.now()).deadTtl,
      state.holding,
    );
    await ranges.fail(namespace, l.range, l.index, 'live', Date.now());
  }

  /**
   * The key's held messages, in order, while the key is free: each delivered from the hold area
   * and removed once handled; one that fails marks the key again and the rest wait.
   */
  async drain(state: KeyState): Promise<void> {
    const { holds, keys, namespace } = this.deps;
    while (state.holding && state.parked_at === undefined) {
      if (!this.inv.mayStart()) return;
      const held = await holds.first(namespace, state.key, HOLD_PAGE);
      if (state.busy_with !== undefined) {
        // Busy with its own first held message: the key was marked for a failure of it that did
        // not finish (an AWS call failed after the mark), which is finished now (failHeld knows one
        // that landed before its hold item went). Busy with any other, the key waits.
        const first = held[0];
        if (first?.envelope.message_id === state.busy_with)
          await this.failHeld(first, state, { reason: 'lease_expired' }, 'expired');
        return;
      }
      if (!held.length) {
        await holds.unmark(namespace, this.shard, state.key);
        await keys.clearHolding(namespace, state.key);
        delete state.holding;
        return;
      }
      for (const h of held) {
        if (!this.inv.mayStart() || state.busy_with !== undefined || state.parked_at !== undefined) return;
        await this.deliverHeld(h, state);
      }
    }
  }

  private async deliverHeld(h: HeldMessage, state: KeyState): Promise<void> {
    const { holds, namespace } = this.deps;
    const deliveries = await holds.begin(namespace, h.key, h.sequence);
    if (deliveries === undefined) return;
    // Begun before and never finished, too often: the invocations that delivered it crashed or timed out.
    if (takenOverTooOften({ takeovers: deliveries - 1 })) {
      await this.failHeld(h, state, { reason: 'lease_expired' }, 'expired');
      return;
    }
    const handled = await this.inv.deliver(h.envelope, (f) => this.failHeld(h, state, f, 'live'));
    if (!handled) return;
    // Acked where it was admitted first (trace reads it there), then out of the hold area.
    const at = await this.deps.ranges.entryAt(namespace, h.shard, h);
    if (at) await this.deps.ranges.ackHeld(namespace, at.range, at.index, Date.now());
    await holds.remove(namespace, h.key, h.sequence);
    this.inv.ackedElsewhere(h.envelope);
  }

  /**
   * A failed delivery of a held message: the key marked, then the failure, then out of the hold
   * area. A hold item whose message went on already (its failure from here landed before and its
   * retry was written, as when the item's removal failed) names nothing to deliver: it goes,
   * without marking the key, which would then wait for a retry that never comes.
   */
  private async failHeld(
    h: HeldMessage,
    state: KeyState,
    f: { reason: FailureReason; error?: string | undefined; retryAfterSeconds?: number },
    lease: 'live' | 'expired',
  ): Promise<Outcome | undefined> {
    const { holds, namespace } = this.deps;
    if (await this.deps.failures.movedOn(namespace, h.envelope)) {
      await holds.remove(namespace, h.key, h.sequence);
      return undefined;
    }
    return this.fail(state, h.envelope, f, async () => {
      const outcome = await this.deps.failures.failHeld(
        this.deps.config,
        {
          queue: namespace,
          shard: h.shard,
          sequence: h.sequence,
          envelope: h.envelope,
          lease: this.inv.leaseView(),
        },
        {
          reason: f.reason,
          ...(f.error !== undefined ? { error: f.error } : {}),
          ...(f.retryAfterSeconds !== undefined ? { retryAfterSeconds: f.retryAfterSeconds } : {}),
          lease,
        },
        Date.now(),
      );
      if (outcome) await holds.remove(namespace, h.key, h.sequence);
      return outcome;
    });
  }

  /**
   * A failed attempt of the key's message: the key first (busy with its retry, or parked behind
   * it dead), so no later message of the key can go before the failure is written; then `write`.
   */
  async fail(
    state: KeyState,
    envelope: Envelope,
    f: { reason: FailureReason; error?: string | undefined },
    write: () => Promise<Outcome | undefined>,
  ): Promise<Outcome | undefined> {
    const { keys, namespace, config } = this.deps;
    const id = envelope.message_id;
    const expected = afterFailure(config, { attempt: envelope.attempt, reason: f.reason, now: Date.now() });
    if (expected.kind === 'retry') {
      if (state.busy_with !== id && !(await keys.claim(namespace, state.key, id)))
        this.deps.logger.warn('the key of a failed message was not free', { key: state.key, message_id: id });
      state.busy_with = id;
    } else {
      await keys.park(namespace, state.key, id, this.shard, Date.now());
      Object.assign(state, { busy_with: undefined, parked_at: Date.now(), dead_message_id: id });
    }
    return write();
  }

  /** The holder was acked: the key is free. */
  private async released(state: KeyState, id: string): Promise<void> {
    await this.deps.keys.release(this.deps.namespace, state.key, id);
    state.busy_with = undefined;
  }
}
