import type { QueueConfig } from '../core/config.js';
import { retentionTtls } from '../core/retention.js';
import { afterFailure, type FailureReason, type Outcome } from '../core/retry-policy.js';
import type { Counters } from '../store/counters.js';
import type { HistoryRecord, MessageStore, StateItem } from '../store/messages.js';
import type { KeyOrder } from './key-order.js';

/**
 * A failed delivery on the per-message layout (ordered pull queues; the lease layer's is
 * range-failures.ts): a nack, or a lease the sweep found expired, the same way for both:
 * history first, then the move to the delay store or the DLQ, then what follows from it.
 * Two failures of one lease generation (a nack and the sweep, or a write and the SDK's retry of
 * it) share its one history item `H#<gen>`: whoever wrote it, it stays when a failure landed and
 * goes when none did (`settleLost`).
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
    await this.deps.counters.addWindow(queue, item.shard, -1);
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
    const record: HistoryRecord = {
      generation: f.generation,
      attempt: item.attempt,
      ...(item.consumer_id ? { consumer_id: item.consumer_id } : {}),
      reason: f.reason,
      ...(f.error !== undefined ? { error: f.error } : {}),
      delivered_at: f.deliveredAt,
      failed_at: now,
    };
    const wrote = await messages.putHistory(queue, item.message_id, record, ttls.deadTtl);
    if (!(await messages.fail(item, f.generation, outcome, f.lease, now, ttls.deadTtl))) {
      await this.settleLost(queue, item, record, wrote, ttls.deadTtl);
      return undefined;
    }
    // This failure rests on another's history item, which that one may have deleted since (it
    // lost the state write and looked before this one landed): then it is written again here.
    if (!wrote) await this.ensureHistory(queue, item.message_id, record, ttls.deadTtl);
    const dead = outcome.kind === 'dead';
    await Promise.all([
      this.deps.counters.addWindow(queue, item.shard, -1),
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

  /**
   * After this failure's state write was refused. The generation's history item stays if a
   * failure of it landed (another's, or this one's own write whose answer was lost and whose
   * retry the condition refused); otherwise the item this failure wrote goes. Every delete is
   * followed by a read of the state, and every landed failure that did not write the item looks
   * for it after its write: whichever comes last sees the other and puts the item back, so a
   * failure that landed always has its attempt in the history (once: one item per generation).
   */
  private async settleLost(
    queue: string,
    item: StateItem,
    record: HistoryRecord,
    wrote: boolean,
    ttl: number,
  ): Promise<void> {
    const { messages } = this.deps;
    const landed = () =>
      messages.get(queue, item.message_id).then((s) => endedByFailure(s, record.generation, item.attempt));
    if (await landed()) {
      if (!wrote) await this.ensureHistory(queue, item.message_id, record, ttl);
      return;
    }
    if (!wrote) return;
    await messages.deleteHistory(queue, item.message_id, record.generation);
    // A failure that landed between the read and the delete may have looked before the delete.
    if (await landed()) await messages.putHistory(queue, item.message_id, record, ttl);
  }

  private async ensureHistory(queue: string, messageId: string, record: HistoryRecord, ttl: number) {
    const history = await this.deps.messages.history(queue, messageId);
    if (!history.some((h) => h.generation === record.generation))
      await this.deps.messages.putHistory(queue, messageId, record, ttl);
  }
}

/**
 * Whether the state item shows that lease `generation`, a delivery of `attempt`, ended as a
 * failed attempt: in the DLQ, or due again with its attempt moved on (a release keeps the
 * attempt; a redrive from the DLQ starts again at 1). A later generation means the lease ended,
 * and a failure since then moved the attempt too. Still leased or acked at that generation: no.
 */
function endedByFailure(state: StateItem | undefined, generation: number, attempt: number): boolean {
  if (!state || state.gen < generation) return false;
  if (state.gen === generation) {
    if (state.state === 'leased' || state.state === 'acked') return false;
    if (state.state === 'dead' || state.state === 'purged') return true;
  }
  return state.attempt !== attempt;
}
