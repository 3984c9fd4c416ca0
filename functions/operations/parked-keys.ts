import { mapLimit } from '../core/async.js';
import { NotFoundError } from '../core/errors.js';
import type { KeyOrder } from '../delivery/key-order.js';
import type { AuditTrail } from '../store/audit.js';
import type { KeyStates } from '../store/key-states.js';
import { iso } from './views.js';

/**
 * An ordered queue's parked keys, each held behind a dead message: list and skip. `queue` is a
 * queue's name or a Lambda consumer's namespace.
 */

export interface ParkedKeysDeps {
  keys: KeyStates;
  keyOrder: KeyOrder;
  audit: AuditTrail;
  now?: () => number;
}

export interface ParkedKey {
  key: string;
  parked_at: string;
  dead_message_id: string;
  held: number;
}

export class ParkedKeys {
  constructor(private readonly deps: ParkedKeysDeps) {}

  async list(queue: string): Promise<ParkedKey[]> {
    const parked = await this.deps.keyOrder.parkedKeys(queue);
    return mapLimit(parked, 8, async (k) => ({
      key: k.key,
      parked_at: iso(k.parked_at),
      dead_message_id: k.dead_message_id ?? '',
      held: await this.deps.keyOrder.heldCount(queue, k),
    }));
  }

  /** Releases a parked key without its dead message, which stays in the DLQ. */
  async skip(
    queue: string,
    key: string,
    reason: string,
    actor: string,
  ): Promise<{ key: string; released: number }> {
    const state = (await this.deps.keys.getMany(queue, [key])).get(key);
    if (state?.parked_at === undefined)
      throw new NotFoundError(`the key ${JSON.stringify(key)} is not parked`);
    const released = await this.deps.keyOrder.unpark(queue, state);
    await this.deps.audit.record(
      queue,
      {
        action: 'skip',
        actor,
        target: key,
        reason,
        detail: { dead_message_id: state.dead_message_id, released },
      },
      this.deps.now?.() ?? Date.now(),
    );
    return { key, released };
  }
}
