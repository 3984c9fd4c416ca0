import { mapLimit } from '../core/async.js';
import {
  holderFate,
  holdersToCheck,
  type KeyView,
  pickLeasable,
  predecessorAllows,
} from '../core/ordering.js';
import type { Counters } from '../store/counters.js';
import type { KeyState, KeyStates } from '../store/key-states.js';
import { gsi } from '../store/keys.js';
import type { MessageStore, StateItem } from '../store/messages.js';

/**
 * Ordering on an ordered queue, over the key states and the messages: who may be leased,
 * what happens to a key when its holder is acked or dead-lettered, and how a parked key's
 * held messages come back.
 */

export interface KeyOrderDeps {
  keys: KeyStates;
  messages: MessageStore;
  counters: Counters;
  now?: () => number;
}

const HELD_PAGE = 100;

export class KeyOrder {
  constructor(private readonly deps: KeyOrderDeps) {}

  /**
   * The candidates (ready items in log order) that may be leased now. A key whose holder is
   * already finished (a crash between the holder's ack and the key's release) is repaired here.
   */
  async leasable(queue: string, candidates: readonly StateItem[]): Promise<StateItem[]> {
    const keyed = candidates.filter((c) => c.key !== undefined);
    if (!keyed.length) return [...candidates];
    const keys = await this.deps.keys.getMany(
      queue,
      keyed.map((c) => c.key as string),
    );
    const suspects = holdersToCheck(candidates, keys);
    if (suspects.length) {
      const holders = await this.deps.messages.getMany(queue, suspects, true);
      for (const [key, state] of keys) {
        if (!state.busy_with || !suspects.includes(state.busy_with)) continue;
        const holder = holders.get(state.busy_with);
        const fate = holderFate(holder?.state);
        if (fate === 'finished' && (await this.deps.keys.release(queue, key, state.busy_with))) {
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
  claim(queue: string, item: StateItem): Promise<boolean> {
    return item.key === undefined
      ? Promise.resolve(true)
      : this.deps.keys.claim(queue, item.key, item.message_id);
  }

  async finished(queue: string, key: string, messageId: string): Promise<void> {
    await this.deps.keys.release(queue, key, messageId);
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
    let released = 0;
    for (;;) {
      const held = await this.deps.messages.heldOf(queue, shard, key, HELD_PAGE);
      const moved = (await mapLimit(held, 16, (item) => this.deps.messages.releaseHeld(item))).filter(
        Boolean,
      ).length;
      if (moved) await this.deps.counters.addWindow(queue, shard, moved);
      released += moved;
      if (held.length < HELD_PAGE || moved === 0) return released;
    }
  }

  /**
   * Held messages whose key is no longer parked: dispatch read the key as parked just before
   * it was released. The sweep returns them.
   */
  async releaseStragglers(queue: string, shard: string): Promise<number> {
    const held = await this.deps.messages.partition(gsi.held(queue, shard), { limit: HELD_PAGE });
    if (!held.length) return 0;
    const keys = await this.deps.keys.getMany(
      queue,
      held.map((h) => h.key as string),
    );
    let released = 0;
    for (const key of new Set(held.map((h) => h.key as string))) {
      if (keys.get(key)?.parked_at === undefined) released += await this.releaseHeld(queue, shard, key);
    }
    return released;
  }

  parkedKeys(queue: string): Promise<KeyState[]> {
    return this.deps.keys.parked(queue);
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }
}
