import { mapLimit } from '../core/async.js';
import { type QueueConfig, streamOf, type TenantConfig } from '../core/config.js';
import type { Envelope } from '../core/envelope.js';
import type { Range } from '../core/ranges.js';
import type { Delivery } from '../core/receipt.js';
import { afterFailure, type FailureReason, type Outcome } from '../core/retry-policy.js';
import type { ShardDirectory } from '../log/stream.js';
import type { HeldMessage, KeyHolds } from '../store/key-holds.js';
import type { KeyState, KeyStates } from '../store/key-states.js';
import type { MessageStore, StateItem } from '../store/messages.js';
import type { RangeStore } from '../store/ranges.js';
import type { SegmentStore } from '../store/segments.js';
import type { StorageMeter } from '../store/storage.js';
import type { NackRequest } from '../wire/requests.js';
import type { AckStatus } from '../wire/responses.js';
import type { RangeFailures } from './range-failures.js';

/**
 * An ordered pull queue's held messages (the sweep moved a parked or long-held key's waiting
 * entries into its hold area: sweep/key-holding.ts), delivered in log order once their key is
 * free: no message holding it, not parked. The key's own item holds the lease (`busy_with` and the lease
 * attributes), so one conditional write both takes the key and leases the message. An ack ends
 * that lease on its condition (so the sweep cannot also fail it) and marks the key `acking`, then
 * marks the entry acked where it was admitted (trace reads it there), then frees the key, then
 * removes the hold item; a crash in between is finished by the sweep, and the next receiver looks
 * at the entry (and the message's item, for a failure that landed) before it delivers. The entry's range is also what tells a hold item that an
 * admitter replaying the run late put back (its message long handled) from a message to deliver:
 * the range's `held` set names what is still to deliver, as the run's first admitter decided.
 */

export interface HeldDeliveryDeps {
  tenant: TenantConfig;
  keys: KeyStates;
  holds: KeyHolds;
  ranges: RangeStore;
  segments: SegmentStore;
  messages: MessageStore;
  failures: RangeFailures;
  shards: ShardDirectory;
  storage: StorageMeter;
  now?: () => number;
}

/** A key with held messages, and its shard. */
export interface HeldKey {
  shard: string;
  key: string;
}

export interface HeldLeased {
  held: HeldMessage;
  /** Its entry in the lease layer (range start, index): the receipt names it. */
  entry: { range: string; index: number };
  envelope: Envelope;
  generation: number;
  deliveredAt: number;
  expiresAt: number;
}

export class HeldDelivery {
  constructor(private readonly deps: HeldDeliveryDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** The keys with held messages, per shard (of `shards`, or all): what `leaseSome` starts from. */
  async marked(queue: string, shards?: readonly string[]): Promise<HeldKey[]> {
    shards ??= await this.deps.shards.shards(streamOf(this.deps.tenant, queue));
    return (
      await Promise.all(
        shards.map(async (shard) =>
          (await this.deps.holds.marked(queue, shard)).map((m) => ({ shard, key: m.key })),
        ),
      )
    ).flat();
  }

  /**
   * Up to `want` held messages, one per key, of keys free to give their next; `marked` as read
   * by `marked` (a receiver reads it while it leases from the ranges).
   */
  async leaseSome(
    queue: string,
    want: number,
    lease: { expiresAt: number; consumerId: string },
    marked: readonly HeldKey[],
  ): Promise<HeldLeased[]> {
    if (!marked.length) return [];
    const states = await this.deps.keys.getMany(
      queue,
      marked.map((m) => m.key),
    );
    const free = shuffle(marked.filter((m) => mayDrain(states.get(m.key))));
    const leased: HeldLeased[] = [];
    for (let i = 0; i < free.length && leased.length < want; i += want - leased.length) {
      const round = free.slice(i, i + want - leased.length);
      const got = await mapLimit(round, 8, (m) =>
        this.leaseFirst(queue, m.shard, states.get(m.key) as KeyState, lease),
      );
      for (const g of got) if (g) leased.push(g);
    }
    return leased;
  }

  /** The key's first held message, if the key is free for it; tidies what a crash left. */
  private async leaseFirst(
    queue: string,
    shard: string,
    state: KeyState,
    lease: { expiresAt: number; consumerId: string },
  ): Promise<HeldLeased | undefined> {
    const { keys, holds } = this.deps;
    const [held] = await holds.first(queue, state.key, 1);
    if (!held) {
      // Admission marks and holds before it sets a new token, which makes these conditions fail.
      if (await keys.clearHolding(queue, state.key, state.holding))
        await holds.unmark(queue, shard, state.key, state.holding);
      return undefined;
    }
    const [entry, item] = await Promise.all([
      this.stillHeld(queue, held),
      this.deps.messages.get(queue, held.envelope.message_id),
    ]);
    if (!entry) return undefined;
    if (failureLanded(item, held)) {
      // Its failure landed (a retry or a dead letter is written) and stopped before the range's
      // write: finished here, or the copy would be delivered again after its retry was acked.
      await this.deps.ranges.heldFailed(queue, { shard: held.shard, start: entry.range }, entry.index);
      await holds.remove(queue, state.key, held.sequence);
      return undefined;
    }
    const now = this.now();
    if (held.envelope.deliver_after && Date.parse(held.envelope.deliver_after) > now) return undefined;
    const envelope = await this.deps.segments.resolve(queue, held.envelope);
    if (!envelope) return undefined;
    const generation = await keys.claimHeld(queue, state.key, held.envelope.message_id, {
      expiresAt: lease.expiresAt,
      deliveredAt: now,
      consumerId: lease.consumerId,
    });
    if (generation === undefined) return undefined;
    // Acked meanwhile: an ack marks the entry before it frees the key, so a claim that followed
    // that ack's release finds the mark here, and gives the key back.
    if (!(await this.stillHeld(queue, held))) {
      const release = { release: true, lease: 'live' } as const;
      await keys.endHeld(queue, state.key, held.envelope.message_id, generation, this.now(), release);
      return undefined;
    }
    return { held, entry, envelope, generation, deliveredAt: now, expiresAt: lease.expiresAt };
  }

  /**
   * The held message's entry while it is still to deliver: in its range's `held` set. Out of it,
   * the message was handled (a crash came between that and the hold item's removal) or the item
   * was put back by a late replay: the item is removed now. Not admitted yet (admission writes the
   * ranges last): not yet.
   */
  private async stillHeld(
    queue: string,
    held: HeldMessage,
  ): Promise<{ range: string; index: number } | undefined> {
    const at = await this.deps.ranges.entryAt(queue, held.shard, held);
    if (!at) return undefined;
    if (toDeliver(at)) return { range: at.range.start, index: at.index };
    await this.deps.holds.remove(queue, held.key, held.sequence);
    return undefined;
  }

  /** The key and log position of a held delivery, from its entry (a receipt does not carry them). */
  private async entryOf(queue: string, d: Delivery): Promise<{ key: string; sequence: string } | undefined> {
    const range = d.entry && (await this.deps.ranges.get(queue, d.shard, d.entry.range));
    if (!range || !d.entry) return undefined;
    const entry = await this.deps.segments.entryAt(queue, range, d.entry.index);
    return entry?.envelope.key === undefined
      ? undefined
      : { key: entry.envelope.key, sequence: entry.sequence };
  }

  async ack(queue: string, d: Delivery): Promise<AckStatus> {
    const at = await this.entryOf(queue, d);
    if (!at) return 'stale_receipt';
    const { key, sequence } = at;
    const now = this.now();
    // The lease ends first, on its condition: an ack and the sweep's failure of the lease once it
    // ran out each end it only if it is still there, so one of them happens, never both. The
    // key stays the message's, marked as acking, until the ack is written where it was admitted.
    const ended = await this.deps.keys.endHeld(queue, key, d.messageId, d.generation, now, {
      release: false,
      lease: 'live',
      acking: true,
    });
    const entry = d.entry as NonNullable<Delivery['entry']>;
    const range = { shard: d.shard, start: entry.range };
    if (!ended) {
      // This ack sent again after its answer was lost (a timeout that reached DynamoDB): the
      // first one ended the lease, and may have finished.
      const state = (await this.deps.keys.getMany(queue, [key])).get(key);
      if (state?.busy_with !== d.messageId || state.acking !== d.generation) {
        const fresh = await this.deps.ranges.get(queue, d.shard, entry.range);
        return fresh?.acked.has(entry.index) ? 'acked' : 'stale_receipt';
      }
    }
    const held = { key, sequence, bytes: entry.bytes };
    await this.finishAck(queue, d.messageId, d.generation, held, range, entry.index);
    return 'acked';
  }

  /**
   * An ack whose lease ended: acked where it was admitted, the key freed, the hold item gone.
   * Whoever frees the key (the ack, or the sweep finishing it) releases its bytes: once.
   */
  async finishAck(
    queue: string,
    messageId: string,
    generation: number,
    held: { key: string; sequence: string; bytes: number },
    range: Pick<Range, 'shard' | 'start'>,
    index: number,
  ): Promise<void> {
    await this.deps.ranges.ackHeld(queue, range, index, this.now());
    const freed = await this.deps.keys.finishAck(queue, held.key, messageId, generation);
    await this.deps.holds.remove(queue, held.key, held.sequence);
    if (freed) await this.deps.storage.release(queue, held.bytes, 1);
  }

  /** The failed attempt of a live held delivery; undefined when the receipt is stale. */
  async nack(
    queue: string,
    config: QueueConfig,
    d: Delivery,
    req: Pick<NackRequest, 'retryable' | 'error' | 'retry_after_seconds' | 'release'>,
  ): Promise<{ outcome: Outcome; attempt: number } | undefined> {
    const at = await this.entryOf(queue, d);
    const state = at && (await this.live(queue, at.key, d));
    const held = state && (await this.heldOf(queue, state.key, d, at.sequence));
    if (!state || !held) return undefined;
    const attempt = held.envelope.attempt;
    if (req.release) {
      // Given back without an attempt: the key is free, and the message is still first in its hold area.
      const release = { release: true, lease: 'live' } as const;
      const now = this.now();
      if (!(await this.deps.keys.endHeld(queue, state.key, d.messageId, d.generation, now, release)))
        return undefined;
      return { outcome: { kind: 'retry', nextAttempt: attempt, dueAt: now }, attempt };
    }
    const reason: FailureReason = req.retryable ? 'nack' : 'non_retryable';
    const entry = d.entry as NonNullable<Delivery['entry']>;
    const outcome = await this.fail(queue, config, held, state, {
      reason,
      error: req.error,
      live: d.generation,
      entry: { range: { shard: d.shard, start: entry.range }, index: entry.index },
    });
    return outcome && { outcome, attempt };
  }

  async extend(queue: string, d: Delivery, expiresAt: number): Promise<boolean> {
    const at = await this.entryOf(queue, d);
    if (!at) return false;
    return this.deps.keys.extendHeld(queue, at.key, d.messageId, d.generation, expiresAt, this.now());
  }

  /**
   * A failed held delivery: the key first (its lease ended, the key kept for the retry, or parked
   * behind it dead), then the failure, then the hold item. `live`: the receipt's generation,
   * whose live lease this ends; without it, a lease that ran out (the sweep).
   */
  async fail(
    queue: string,
    config: QueueConfig,
    held: HeldMessage,
    /** The key as read before: its lease is the attempt's. */
    state: KeyState,
    f: {
      reason: FailureReason;
      error?: string | undefined;
      live?: number;
      /** Its entry where it was admitted, as the caller found it. */
      entry: { range: Pick<Range, 'shard' | 'start'>; index: number } | undefined;
    },
  ): Promise<Outcome | undefined> {
    const key = state.key;
    const now = this.now();
    const id = held.envelope.message_id;
    const envelope = await this.deps.segments.resolve(queue, held.envelope);
    if (!envelope) throw new Error(`the payload of held message ${id} is gone`);
    const expected = afterFailure(config, { attempt: envelope.attempt, reason: f.reason, now });
    if (f.live !== undefined) {
      const ended =
        expected.kind === 'dead'
          ? await this.deps.keys.park(queue, key, id, held.shard, now)
          : await this.deps.keys.endHeld(queue, key, id, f.live, now, { release: false, lease: 'live' });
      if (!ended) return undefined;
    } else if (expected.kind === 'dead') await this.deps.keys.park(queue, key, id, held.shard, now);
    const outcome = await this.deps.failures.failHeld(
      config,
      {
        queue,
        shard: held.shard,
        sequence: held.sequence,
        envelope,
        lease: {
          expiresAt: state.lease_expires_at ?? now,
          deliveredAt: state.lease_delivered_at ?? now,
          ...(state.lease_consumer !== undefined ? { consumerId: state.lease_consumer } : {}),
        },
      },
      {
        reason: f.reason,
        ...(f.error !== undefined ? { error: f.error } : {}),
        lease: f.live ? 'live' : 'expired',
      },
      now,
    );
    // Its retry or dead letter is written: the entry no longer names a message to deliver.
    if (outcome && f.entry) await this.deps.ranges.heldFailed(queue, f.entry.range, f.entry.index);
    await this.deps.holds.remove(queue, key, held.sequence);
    return outcome;
  }

  /** The key, if the held delivery `d` still holds it with a live lease. */
  private async live(queue: string, key: string, d: Delivery): Promise<KeyState | undefined> {
    const state = (await this.deps.keys.getMany(queue, [key])).get(key);
    const live =
      state?.busy_with === d.messageId &&
      state.lease_gen === d.generation &&
      (state.lease_expires_at ?? 0) > this.now();
    return live ? state : undefined;
  }

  private async heldOf(
    queue: string,
    key: string,
    d: Delivery,
    sequence: string,
  ): Promise<HeldMessage | undefined> {
    const [first] = await this.deps.holds.first(queue, key, 1);
    return first?.envelope.message_id === d.messageId && first.sequence === sequence ? first : undefined;
  }
}

/** A key worth a look for its hold area: held messages, not parked, held by nothing. */
function mayDrain(state: KeyState | undefined): state is KeyState {
  return (
    state?.holding !== undefined &&
    state.parked_at === undefined &&
    state.busy_with === undefined &&
    state.lease_expires_at === undefined
  );
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

/**
 * Whether a held message's failure landed: its item, of this life, left this entry for the delay
 * store or the DLQ, or already moved on to a later entry (its retry).
 */
function failureLanded(item: StateItem | undefined, held: HeldMessage): boolean {
  if (!item || item.produced_at !== Date.parse(held.envelope.produced_at)) return false;
  if (item.entry !== held.envelope.entry) return item.entry > held.envelope.entry;
  return item.state !== 'ranged' && item.shard === held.shard && item.seq === held.sequence;
}

/** A held entry whose message is still to deliver from its key's hold area. */
export function toDeliver(at: { range: Range; index: number }): boolean {
  return at.range.held.has(at.index) && !at.range.acked.has(at.index);
}
