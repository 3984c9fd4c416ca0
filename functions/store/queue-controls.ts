import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { pauseKey } from './keys.js';

/**
 * A queue's pause (an incident control): while the item exists, receive answers nothing and the
 * queue's Lambda consumers hold their batches; produce goes on. Readers on the delivery path ask
 * `isPaused`, which reads the item at most once per CHECK_MS per instance: a pause or a resume
 * takes effect within that, for a read every CHECK_MS of each busy instance.
 */

export interface Pause {
  paused_at: string;
  actor: string;
  reason: string;
}

export const PAUSE_CHECK_MS = 1000;

export class PauseStore {
  private readonly seen = new Map<string, { paused: boolean; until: number }>();

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly now: () => number = Date.now,
  ) {}

  async pause(queue: string, pause: Pause): Promise<void> {
    await this.doc.send(new PutCommand({ TableName: this.table, Item: { ...pauseKey(queue), ...pause } }));
    this.seen.delete(queue);
  }

  /** Ends the pause; the pause it ended, or undefined when the queue was not paused. */
  async resume(queue: string): Promise<Pause | undefined> {
    const out = await this.doc.send(
      new DeleteCommand({ TableName: this.table, Key: pauseKey(queue), ReturnValues: 'ALL_OLD' }),
    );
    this.seen.delete(queue);
    return out.Attributes ? toPause(out.Attributes) : undefined;
  }

  async get(queue: string): Promise<Pause | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: pauseKey(queue), ConsistentRead: true }),
    );
    return out.Item ? toPause(out.Item) : undefined;
  }

  async isPaused(queue: string): Promise<boolean> {
    const now = this.now();
    const cached = this.seen.get(queue);
    if (cached && cached.until > now) return cached.paused;
    const out = await this.doc.send(new GetCommand({ TableName: this.table, Key: pauseKey(queue) }));
    this.seen.set(queue, { paused: out.Item !== undefined, until: now + PAUSE_CHECK_MS });
    return out.Item !== undefined;
  }
}

function toPause(item: Record<string, unknown>): Pause {
  return { paused_at: String(item.paused_at), actor: String(item.actor), reason: String(item.reason) };
}
