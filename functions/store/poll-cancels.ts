import { type DocumentClient, GetCommand, PutCommand } from '../aws/dynamodb.js';
import { pollCancelKey, TTL_ATTRIBUTE } from './keys.js';

/**
 * Long polls called off by their callers (a worker stopping): one small item each, kept a minute
 * (a poll waits 20 s at most). The poll reads it only when it has messages to answer, so a poll
 * that ends empty costs nothing, and one called off gives back what it leased instead of leaving
 * it leased to nobody until the lease runs out (an attempt used).
 */

const KEEP_SECONDS = 60;

export class PollCancels {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  async cancel(queue: string, pollId: string, now: number): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: { ...pollCancelKey(queue, pollId), [TTL_ATTRIBUTE]: Math.ceil(now / 1000) + KEEP_SECONDS },
      }),
    );
  }

  async isCancelled(queue: string, pollId: string): Promise<boolean> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: pollCancelKey(queue, pollId), ConsistentRead: true }),
    );
    return out.Item !== undefined;
  }
}
