import { mapLimit } from '../core/async.js';
import { isNamespace } from '../core/config.js';
import {
  holderFate,
  holdersToCheck,
  type KeyView,
  pickLeasable,
  predecessorAllows,
} from '../core/ordering.js';
import type { Counters } from '../store/counters.js';
import type { KeyHolds } from '../store/key-holds.js';
import type { KeyState, KeyStates } from '../store/key-states.js';
import { gsi } from '../store/keys.js';
import type { MessageStore, StateItem } from '../store/messages.js';
import type { Requeue } from './requeue.js';

/**
 * Ordering on an ordered queue, over the key states and the messages: who may be leased,
 * what happens to a key when its holder is acked or dead-lettered, and how held messages come
 * back: to the ready index for pull consumers; for a Lambda consumer's namespace (whose held
 * messages are in its keys' hold areas: consumer/keyed-delivery.ts) by a wake record through the
 * log, which the consumer answers by delivering them.
 */

export interface KeyOrderDeps {
  keys: KeyStates;
  holds: KeyHolds;
  messages: MessageStore;
  counters: Counters;
  requeue: Requeue;
  now?: () => number;
}

const HELD_PAGE = 100;

export class KeyOrder {
  constructor(private readonly deps: KeyOrderDeps) {}

  /**
   * The candidates (ready items in log order) that may be leased now. A key whose holder is
   * already finished (a crash between the holder's ack and the key's release) is repaired here.
   */
  async leasable<T extends Pick<StateItem, 'message_id' | 'key' | 'prev'>>(
    queue: string,
    candidates: readonly T[],
    /** Key states the caller has just read consistently: not read again. */
    known?: ReadonlyMap<string, KeyState>,
  ): Promise<T[]> {
    const keyed = candidates.filter((c) => c.key !== undefined);
    if (!keyed.length) return [...candidates];
    const keys = new Map(
      known ??
        (await this.deps.keys.getMany(
          queue,
          keyed.map((c) => c.key as string),
        )),
    );
    const suspects = holdersToCheck(candidates, keys);
    if (suspects.length) {
      const holders = await this.deps.messages.getMany(queue, suspects, true);
      for (const [key, state] of keys) {
        if (!state.busy_with || !suspects.includes(state.busy_with)) continue;
        const holder = holders.get(state.busy_with);
        const fate = holderFate(holder?.state);
        if (fate === 'finished' && (await this.finished(queue, key, state.busy_with))) {
          keys.set(key, { key });
        } else if (fate === 'dead' && holder) {
          await this.deps.keys.park(queue, key, holder.message_id, holder.shard, this.now());
          keys.set(key, { key, parked_at: this.now() });
        }
      }
    }
    const picked = pickLeasable(candidates, keys as ReadonlyMap<string, KeyView>);
    // A message that does not hold its key yet goes only after its predecessor.
    const newcomers = picked.filter(
      (c) => c.key !== undefined && keys.get(c.key)?.busy_with !== c.message_id,
    );
    const prevs = await this.deps.messages.getMany(
      queue,
      newcomers.flatMap((c) => (c.prev === undefined ? [] : [c.prev])),
      true,
    );
    return picked.filter(
      (c) => !newcomers.includes(c) || c.prev === undefined || predecessorAllows(prevs.get(c.prev)?.state),
    );
  }

  /** Takes the item's key for it before it is leased; false when another message holds it. */
  claim(queue: string, item: Pick<StateItem, 'key' | 'message_id'>): Promise<boolean> {
    return item.key === undefined
      ? Promise.resolve(true)
      : this.deps.keys.claim(queue, item.key, item.message_id);
  }

  /** The holder is done: the key is free. */
  async finished(queue: string, key: string, messageId: string): Promise<boolean> {
    return (await this.deps.keys.release(queue, key, messageId)) !== undefined;
  }

  async died(queue: string, item: Pick<StateItem, 'key' | 'message_id' | 'shard'>): Promise<void> {
    if (item.key !== undefined)
      await this.deps.keys.park(queue, item.key, item.message_id, item.shard, this.now());
  }

  /**
   * Ends parking and returns the held messages to the ready index in their log order (they
   * count in the window again). With `busyWith`, that message holds the key first.
   */
  async unpark(queue: string, state: KeyState, busyWith?: string): Promise<number> {
    if (!state.dead_message_id || !state.shard) return 0;
    await this.deps.keys.unpark(queue, state.key, state.dead_message_id, busyWith);
    return this.releaseHeld(queue, state.shard, state.key);
  }

  async releaseHeld(queue: string, shard: string, key: string): Promise<number> {
    if (isNamespace(queue)) {
      const held = await this.deps.holds.count(queue, key);
      if (held) await this.deps.requeue.wake(queue, key, this.now());
      return held;
    }
    let released = 0;
    for (;;) {
      const held = await this.deps.messages.heldOf(queue, shard, key, HELD_PAGE);
      const moved = await this.toReady(queue, shard, held);
      released += moved;
      if (held.length < HELD_PAGE || moved === 0) return released;
    }
  }

  /** Pull: held messages to the ready index in log order; they count in the window again. */
  private async toReady(queue: string, shard: string, held: StateItem[]): Promise<number> {
    const moved = (await mapLimit(held, 16, (item) => this.deps.messages.releaseHeld(item))).filter(
      Boolean,
    ).length;
    if (moved) await this.deps.counters.addWindow(queue, shard, moved);
    return moved;
  }

  /**
   * Held messages of a pull queue that nothing will release: dispatch read the key as parked just
   * before it was released; a redrive that stopped between putting the dead message back and
   * unparking its key. The sweep returns them.
   */
  async releaseStragglers(queue: string, shard: string): Promise<number> {
    const held = await this.deps.messages.partition(gsi.held(queue, shard), { limit: HELD_PAGE });
    if (!held.length) return 0;
    const keys = await this.deps.keys.getMany(
      queue,
      held.map((h) => h.key as string),
    );
    const isParked = (h: StateItem) => keys.get(h.key as string)?.parked_at !== undefined;
    let released = await this.finishRedrives(queue, held.filter(isParked), keys);
    const unparked = held.filter((h) => !isParked(h));
    for (const key of new Set(unparked.map((h) => h.key as string))) {
      released += await this.releaseHeld(queue, shard, key);
    }
    return released;
  }

  /** Parked keys whose dead message was redriven meanwhile: unparked, that message holding them. */
  private async finishRedrives(
    queue: string,
    held: readonly StateItem[],
    keys: ReadonlyMap<string, KeyState>,
  ): Promise<number> {
    const parked = [...new Set(held.map((h) => h.key as string))].flatMap((k) => {
      const state = keys.get(k);
      return state?.dead_message_id === undefined ? [] : [state];
    });
    if (!parked.length) return 0;
    const deadOnes = await this.deps.messages.getMany(
      queue,
      parked.map((k) => k.dead_message_id as string),
      true,
    );
    let released = 0;
    for (const state of parked) {
      const message = deadOnes.get(state.dead_message_id as string);
      // Still dead, or purged (the owner's skip releases that key), or gone: nothing to finish.
      if (!message || message.state === 'dead' || message.state === 'purged') continue;
      released += await this.unpark(
        queue,
        state,
        holderFate(message.state) === 'live' ? message.message_id : undefined,
      );
    }
    return released;
  }

  /** How many messages wait behind the key: in a Lambda consumer's hold area, or a pull queue's held partition. */
  heldCount(queue: string, state: KeyState): Promise<number> {
    if (isNamespace(queue)) return this.deps.holds.count(queue, state.key);
    return state.shard ? this.deps.messages.countHeld(queue, state.shard, state.key) : Promise.resolve(0);
  }

  /** A Lambda consumer's messages waiting in its keys' hold areas, on these shards. */
  async heldInHoldAreas(namespace: string, shards: readonly string[]): Promise<number> {
    const markers = (
      await Promise.all(shards.map((shard) => this.deps.holds.marked(namespace, shard)))
    ).flat();
    const counts = await mapLimit(markers, 8, (m) => this.deps.holds.count(namespace, m.key));
    return counts.reduce((a, n) => a + n, 0);
  }

  parkedKeys(queue: string): Promise<KeyState[]> {
    return this.deps.keys.parked(queue);
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }
}
