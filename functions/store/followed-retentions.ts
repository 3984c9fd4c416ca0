import { type DocumentClient, GetCommand, PutCommand } from '../aws/dynamodb.js';
import { followedRetentionKey } from './keys.js';

/**
 * The DLQ retention (hours) of each queue as the sweep last saw it in the tenant file, so a rise
 * is noticed once (operations/dlq-retention.ts `follow`). One small item a queue.
 */
export class FollowedRetentions {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  async get(queue: string): Promise<number | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: followedRetentionKey(queue) }),
    );
    return out.Item?.hours as number | undefined;
  }

  async set(queue: string, hours: number): Promise<void> {
    await this.doc.send(
      new PutCommand({ TableName: this.table, Item: { ...followedRetentionKey(queue), hours } }),
    );
  }
}
