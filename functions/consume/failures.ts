import { isNamespace, type QueueConfig } from '../core/config.js';
import { retentionTtls } from '../core/retention.js';
import { afterFailure, type FailureReason, type Outcome } from '../core/retry-policy.js';
import type { Counters } from '../store/counters.js';
import type { MessageStore, StateItem } from '../store/messages.js';
import type { KeyOrder } from './key-order.js';

/**
 * A failed delivery (a nack, or a lease the sweep found expired), the same way for both:
 * history first, then the move to the delay store or the DLQ, then what follows from it.
 */

export interface FailuresDeps {
  messages: MessageStore;
  counters: Counters;
  keyOrder: KeyOrder;
}

export interface FailedDelivery {
  generation: number;
  reason: FailureReason;
  deliveredAt: number;
  error?: string;
  retryAfterSeconds?: number;
  /** A nack ends a live lease; the sweep ends an expired one. */
  lease: 'live' | 'expired';
}

export class Failures {
  constructor(private readonly deps: FailuresDeps) {}

  /**
   * Ends a live lease without a failed attempt: the message is due again after `retryAfterSeconds`
   * with the same attempt number and no history entry. On an ordered queue it keeps its key.
   */
  async release(
    queue: string,
    item: StateItem,
    generation: number,
    retryAfterSeconds: number,
    now: number,
  ): Promise<Outcome | undefined> {
    const outcome = {
      kind: 'retry' as const,
      nextAttempt: item.attempt,
      dueAt: now + retryAfterSeconds * 1000,
    };
    if (!(await this.deps.messages.fail(item, generation, outcome, 'live', now, 0))) return undefined;
    if (!isNamespace(queue)) await this.deps.counters.addWindow(queue, item.shard, -1);
    return outcome;
  }

  /** The outcome, or undefined when the lease was no longer that delivery's (stale). */
  async fail(
    queue: string,
    config: QueueConfig,
    item: StateItem,
    f: FailedDelivery,
    now: number,
  ): Promise<Outcome | undefined> {
    const outcome = afterFailure(config, {
      attempt: item.attempt,
      reason: f.reason,
      ...(f.retryAfterSeconds !== undefined ? { retryAfterSeconds: f.retryAfterSeconds } : {}),
      now,
    });
    const ttls = retentionTtls(config, now);
    const { messages } = this.deps;
    const wrote = await messages.putHistory(
      queue,
      item.message_id,
      {
        generation: f.generation,
        attempt: item.attempt,
        ...(item.consumer_id ? { consumer_id: item.consumer_id } : {}),
        reason: f.reason,
        ...(f.error !== undefined ? { error: f.error } : {}),
        delivered_at: f.deliveredAt,
        failed_at: now,
      },
      ttls.deadTtl,
    );
    if (!(await messages.fail(item, f.generation, outcome, f.lease, now, ttls.deadTtl))) {
      if (wrote) await messages.deleteHistory(queue, item.message_id, f.generation);
      return undefined;
    }
    const dead = outcome.kind === 'dead';
    await Promise.all([
      // A push consumer's namespace has no window: its records never pass through dispatch.
      isNamespace(queue) ? Promise.resolve() : this.deps.counters.addWindow(queue, item.shard, -1),
      this.deps.counters.addStats(queue, {
        ...(f.lease === 'live' ? { nacked: 1 } : {}),
        ...(dead ? { dead_lettered: 1 } : {}),
      }),
      ...(dead
        ? [
            messages.putEvent(
              queue,
              item.message_id,
              { event: 'dead_lettered', detail: { reason: outcome.reason } },
              now,
              ttls.deadTtl,
            ),
            config.ordered ? this.deps.keyOrder.died(queue, item) : Promise.resolve(),
          ]
        : []),
    ]);
    return outcome;
  }
}
