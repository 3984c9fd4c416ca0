import { type DocumentClient, GetCommand, UpdateCommand } from '../aws/dynamodb.js';
import { buildUpdate } from './expression.js';
import { queueControlsKey } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * A queue's controls, in one item read by the delivery path: its pause (an incident control:
 * while set, receive answers nothing and the queue's Lambda consumers hold their batches; produce
 * goes on), and its purge mark (SQS's PurgeQueue: what was produced before it is acked, not
 * delivered, when a receive meets it). Readers ask `look`, which reads the item at most once per
 * CHECK_MS per instance: a change takes effect within that, for a read every CHECK_MS of each
 * busy instance, whatever the number of controls.
 */

export interface Pause {
  paused_at: string;
  actor: string;
  reason: string;
}

export interface Controls {
  paused: boolean;
  /** Messages produced before this (epoch ms) are purged. */
  purgedBefore?: number;
}

export const PAUSE_CHECK_MS = 1000;

const PAUSE_FIELDS = ['paused_at', 'actor', 'reason'] as const;

export class QueueControls {
  private readonly seen = new Map<string, { controls: Controls; until: number }>();

  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
    private readonly now: () => number = Date.now,
  ) {}

  async pause(queue: string, pause: Pause): Promise<void> {
    await this.update(queue, { set: { ...pause } });
  }

  /** Ends the pause; the pause it ended, or undefined when the queue was not paused. */
  async resume(queue: string): Promise<Pause | undefined> {
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: queueControlsKey(queue),
          ...buildUpdate({ remove: [...PAUSE_FIELDS], condition: 'attribute_exists(#paused_at)' }),
          ReturnValues: 'ALL_OLD',
        }),
      );
      return out.Attributes ? toPause(out.Attributes) : undefined;
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    } finally {
      this.seen.delete(queue);
    }
  }

  /** Purges what was produced before `before` (later marks replace earlier ones). */
  async purge(queue: string, before: number): Promise<void> {
    await this.update(queue, { set: { purged_before: before } });
  }

  async get(queue: string): Promise<Pause | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: queueControlsKey(queue), ConsistentRead: true }),
    );
    return out.Item?.paused_at !== undefined ? toPause(out.Item) : undefined;
  }

  /** The controls as this instance last read them, at most CHECK_MS ago. */
  async look(queue: string): Promise<Controls> {
    const now = this.now();
    const cached = this.seen.get(queue);
    if (cached && cached.until > now) return cached.controls;
    const out = await this.doc.send(new GetCommand({ TableName: this.table, Key: queueControlsKey(queue) }));
    const controls: Controls = {
      paused: out.Item?.paused_at !== undefined,
      ...(typeof out.Item?.purged_before === 'number' ? { purgedBefore: out.Item.purged_before } : {}),
    };
    this.seen.set(queue, { controls, until: now + PAUSE_CHECK_MS });
    return controls;
  }

  async isPaused(queue: string): Promise<boolean> {
    return (await this.look(queue)).paused;
  }

  private async update(queue: string, spec: Parameters<typeof buildUpdate>[0]): Promise<void> {
    await this.doc.send(
      new UpdateCommand({ TableName: this.table, Key: queueControlsKey(queue), ...buildUpdate(spec) }),
    );
    this.seen.delete(queue);
  }
}

function toPause(item: Record<string, unknown>): Pause {
  return { paused_at: String(item.paused_at), actor: String(item.actor), reason: String(item.reason) };
}
