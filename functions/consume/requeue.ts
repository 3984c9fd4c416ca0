import { mapLimit } from '../core/async.js';
import { namespaceParts, streamName, type TenantConfig } from '../core/config.js';
import type { Envelope } from '../core/envelope.js';
import type { StreamLog } from '../log/stream.js';
import type { MessageStore, StateItem } from '../store/messages.js';

/**
 * Puts messages back into their queue's stream as their next entry: due retries (the sweep),
 * redriven dead letters (attempt 1 again), and on a Lambda consumer of an ordered queue,
 * messages held while their key was busy or parked. The new entry is appended first; the item
 * leaves its index partition only once the entry is in the log, so a crash in between leaves a
 * second copy, which admission takes once.
 */

export interface RequeueDeps {
  tenant: TenantConfig;
  messages: MessageStore;
  log: StreamLog;
}

export class Requeue {
  constructor(private readonly deps: RequeueDeps) {}

  /**
   * Appends the items (of one namespace) as their next entry, for the namespace's consumer only
   * when it is a consumer's. Answers the items that landed in the log.
   */
  async reappend(
    namespace: string,
    items: readonly StateItem[],
    from: 'delayed' | 'held' | 'dead',
    now: number,
  ): Promise<StateItem[]> {
    if (!items.length) return [];
    const { queue, consumer } = namespaceParts(namespace);
    const ordered = this.deps.tenant.queues[queue]?.ordered ?? false;
    const bodies = await this.deps.messages.bodies(items);
    const envelopes: Envelope[] = items.map((item) => {
      const body = bodies.get(item.pk);
      if (!body) throw new Error(`the body of ${item.message_id} is missing`);
      return {
        v: 1,
        ...body,
        // A consumer's stored body names its namespace; the record belongs to the queue.
        queue,
        attempt: from === 'dead' ? 1 : item.attempt,
        entry: item.entry + 1,
        enqueued_at: new Date(now).toISOString(),
        ...(consumer !== undefined ? { for: consumer } : {}),
      };
    });
    const appended = await this.deps.log.append(
      streamName(this.deps.tenant.tenant, queue),
      envelopes.map((env) => ({
        partitionKey: env.key ?? env.message_id,
        data: Buffer.from(JSON.stringify(env)),
      })),
      { preserveKeyOrder: ordered },
    );
    const landed = items.filter((_, i) => appended[i]?.ok);
    await mapLimit(landed, 16, (item) =>
      this.deps.messages.markRequeued(namespace, item.message_id, item.entry, from),
    );
    return landed;
  }
}
