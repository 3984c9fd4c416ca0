import { mapLimit } from '../core/async.js';
import { isNamespace } from '../core/config.js';
import type { KeyHolds } from '../store/key-holds.js';
import type { KeyState, KeyStates } from '../store/key-states.js';
import type { Requeue } from './requeue.js';

/**
 * The operator's side of an ordered queue's keys: parked keys, releasing one (a skip, a redrive)
 * and what waits in the keys' hold areas. A released pull queue's key is found by its receivers
 * (delivery/held-delivery.ts); a Lambda consumer's gets a wake record through the log, which the
 * consumer answers by delivering its held messages (lambda-consumer/keyed-delivery.ts).
 */

export interface KeyOrderDeps {
  keys: KeyStates;
  holds: KeyHolds;
  requeue: Requeue;
  now?: () => number;
}

export class KeyOrder {
  constructor(private readonly deps: KeyOrderDeps) {}

  /**
   * Ends parking; its held messages go next, in their log order. With `busyWith`, that message
   * holds the key first (a redriven dead letter). Answers how many are held.
   */
  async unpark(queue: string, state: KeyState, busyWith?: string): Promise<number> {
    if (!state.dead_message_id) return 0;
    await this.deps.keys.unpark(queue, state.key, state.dead_message_id, busyWith);
    return this.releaseHeld(queue, state.key);
  }

  /**
   * A released key's held messages: a Lambda consumer's get a wake record, which it answers by
   * delivering them; a pull queue's receivers find the key by its hold marker. Answers how many.
   */
  async releaseHeld(queue: string, key: string): Promise<number> {
    const held = await this.deps.holds.count(queue, key);
    if (held && isNamespace(queue)) await this.deps.requeue.wake(queue, key, this.now());
    return held;
  }

  /** How many messages wait in the key's hold area. */
  heldCount(queue: string, state: KeyState): Promise<number> {
    return this.deps.holds.count(queue, state.key);
  }

  /** The messages waiting in the hold areas of a queue's (or a Lambda consumer's) keys, on these shards. */
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
