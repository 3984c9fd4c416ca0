import * as z from 'zod/mini';
import type { ClaimStore } from '../claims/claims.js';
import { mapLimit } from '../core/async.js';
import type { QueueConfig } from '../core/config.js';
import { deliveryContext } from '../core/envelope.js';
import '../core/zod-mini.js';
import { InvalidRequestError, MessageNotFoundError } from '../core/errors.js';
import { deadLetterExpiry, deadLetterLive, retentionTtls } from '../core/retention.js';
import type { AuditTrail } from '../store/audit.js';
import { gsi } from '../store/keys.js';
import type { MessageStore, StateItem } from '../store/messages.js';
import type { StorageMeter } from '../store/storage.js';
import { type AttemptView, attemptView, iso } from './views.js';

/**
 * A queue's dead letters: list, get, purge (docs/contract.md, "Dead letters and operations").
 * `queue` is a queue's name or a Lambda consumer's namespace (consumerNamespace), whose dead
 * letters are kept the same way.
 */

export interface DeadLettersDeps {
  messages: MessageStore;
  claims: ClaimStore;
  audit: AuditTrail;
  storage: StorageMeter;
  now?: () => number;
}

export interface DeadLetter {
  message_id: string;
  key: string | null;
  payload: unknown;
  headers: Record<string, string>;
  enqueued_at: string;
  dead_at: string;
  attempts: AttemptView[];
  schema_ref?: string;
  traceparent?: string;
  replay_id?: string;
}

const cursorSchema = z.strictObject({
  pk: z.string(),
  sk: z.string(),
  gsi1pk: z.string(),
  gsi1sk: z.string(),
});

export class DeadLetters {
  constructor(private readonly deps: DeadLettersDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  async list(
    queue: string,
    config: QueueConfig,
    limit: number,
    cursor: string | undefined,
  ): Promise<{ messages: DeadLetter[]; next_cursor: string | null }> {
    const page = await this.deps.messages.page(gsi.dead(queue), limit, decodeCursor(cursor, gsi.dead(queue)));
    const live = page.items.filter((item) => deadLetterLive(item, config, this.now()));
    return {
      messages: await this.views(queue, live),
      next_cursor: page.last ? Buffer.from(JSON.stringify(page.last)).toString('base64url') : null,
    };
  }

  async get(queue: string, config: QueueConfig, messageId: string): Promise<DeadLetter> {
    const item = await this.deps.messages.get(queue, messageId);
    if (item?.state !== 'dead' || !deadLetterLive(item, config, this.now()))
      throw new MessageNotFoundError(messageId);
    return (await this.views(queue, [item]))[0] as DeadLetter;
  }

  /** Removes a dead letter for good; the deletion is in the audit trail and the message's trace. */
  async purge(queue: string, config: QueueConfig, messageId: string, actor: string): Promise<void> {
    const item = await this.deps.messages.get(queue, messageId);
    const now = this.now();
    if (item?.state !== 'dead' || !deadLetterLive(item, config, this.now()))
      throw new MessageNotFoundError(messageId);
    const ttls = retentionTtls(config, now);
    if (!(await this.deps.messages.purge(item, now, ttls.deadTtl))) throw new MessageNotFoundError(messageId);
    await Promise.all([
      this.deps.storage.release(queue, item.bytes ?? 0, 0),
      this.deps.storage.leftDlq(queue, item.bytes ?? 0, deadLetterExpiry(item, config)),
      this.deps.messages.putEvent(
        queue,
        messageId,
        { event: 'purged', detail: { by: actor } },
        now,
        ttls.deadTtl,
      ),
      this.deps.audit.record(queue, { action: 'purge', actor, target: messageId }, now),
    ]);
  }

  private async views(queue: string, items: StateItem[]): Promise<DeadLetter[]> {
    const bodies = await this.deps.messages.bodies(items);
    return mapLimit(items, 8, async (item) => {
      const body = bodies.get(item.pk);
      const history = await this.deps.messages.history(queue, item.message_id, item);
      return {
        message_id: item.message_id,
        key: body?.key ?? null,
        payload: body ? await this.deps.claims.payloadOf(body) : undefined,
        headers: body?.headers ?? {},
        enqueued_at: body?.produced_at ?? iso(item.produced_at),
        dead_at: iso(item.dead_at),
        attempts: history.map(attemptView),
        ...deliveryContext(body ?? {}),
      };
    });
  }
}

function decodeCursor(cursor: string | undefined, partition: string): Record<string, unknown> | undefined {
  if (!cursor) return undefined;
  try {
    const key = cursorSchema.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    if (key.gsi1pk !== partition) throw new Error('cursor of another queue');
    return key;
  } catch {
    throw new InvalidRequestError('cursor is not a cursor this listing returned', [
      { path: 'cursor', message: 'invalid' },
    ]);
  }
}
