import type { QueueConfig } from '../core/config.js';
import { InvalidRequestError, NotFoundError } from '../core/errors.js';
import type { AuditEntry, AuditTrail } from '../store/audit.js';
import type { Pause, QueueControls } from '../store/queue-controls.js';
import { iso } from './views.js';

/**
 * An admin's actions on a whole queue: purge (SQS's PurgeQueue), pause and resume of its
 * deliveries, and the audit trail that records them with the other operations.
 */

export interface QueueAdminDeps {
  controls: QueueControls;
  audit: AuditTrail;
  now?: () => number;
}

export class QueueAdmin {
  constructor(private readonly deps: QueueAdminDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /**
   * SQS's PurgeQueue on a pull queue: everything produced before now goes unread (receives ack
   * it as they meet it: QueueControls). Dead letters stay: SQS's DLQ is a queue of its own.
   * Audited.
   */
  async purge(queue: string, config: QueueConfig, actor: string): Promise<void> {
    if (config.consumers.length)
      throw new InvalidRequestError(
        `queue ${queue} is consumed by Lambda consumers: only a pull queue can be purged`,
      );
    const now = this.now();
    await this.deps.controls.purge(queue, now);
    await this.deps.audit.record(queue, { action: 'purge_queue', actor, target: queue }, now);
  }

  /**
   * Pauses deliveries of the queue: receive answers nothing and its Lambda consumers hold their
   * batches, while produce goes on. Audited with its reason; pausing again replaces the reason.
   */
  async pause(queue: string, reason: string, actor: string): Promise<Pause> {
    const now = this.now();
    const pause = { paused_at: iso(now), actor, reason };
    await this.deps.controls.pause(queue, pause);
    await this.deps.audit.record(queue, { action: 'pause', actor, target: queue, reason }, now);
    return pause;
  }

  /** Ends a pause; audited. A queue that was not paused answers NOT_FOUND. */
  async resume(queue: string, reason: string | undefined, actor: string): Promise<{ resumed: Pause }> {
    const ended = await this.deps.controls.resume(queue);
    if (!ended) throw new NotFoundError(`the queue ${queue} is not paused`);
    await this.deps.audit.record(
      queue,
      {
        action: 'resume',
        actor,
        target: queue,
        ...(reason !== undefined ? { reason } : {}),
        detail: { paused_at: ended.paused_at },
      },
      this.now(),
    );
    return { resumed: ended };
  }

  auditTrail(queue: string, limit: number): Promise<AuditEntry[]> {
    return this.deps.audit.list(queue, limit);
  }
}
