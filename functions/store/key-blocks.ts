import { type DocumentClient, GetCommand, UpdateCommand } from '../aws/dynamodb.js';
import { writeToken } from '../core/ids.js';
import { decodeKey, keyBlockAttribute, keyBlocksKey } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * An ordered pull queue's keys that wait for more than their ranges show, one item per shard: a
 * key parked behind a dead letter, held by a message outside the ranges (a lease or retry the gap
 * cap moved out, a retry or redriven dead letter on its way back through the log), or with
 * messages in its hold area. A receiver reads it (consistently, after the ranges) beside each
 * look, so a free key costs no read of its own; only a key named here has its state read.
 *
 * A block is written after the key's state and before the range write that finishes the key's
 * entry, so a receiver that sees that entry finished sees the block too. It is taken off only
 * with the token read, by the sweep once the key's state says it is free: a key blocked again
 * meanwhile has a new token and stays.
 */
export class KeyBlocks {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  async block(queue: string, shard: string, key: string): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: keyBlocksKey(queue, shard),
        UpdateExpression: 'SET #k = :t',
        ExpressionAttributeNames: { '#k': keyBlockAttribute(key) },
        ExpressionAttributeValues: { ':t': writeToken() },
      }),
    );
  }

  /** The shard's blocked keys, each with its token. */
  async read(queue: string, shard: string): Promise<Map<string, number>> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: keyBlocksKey(queue, shard), ConsistentRead: true }),
    );
    const blocked = new Map<string, number>();
    for (const [name, token] of Object.entries(out.Item ?? {}))
      if (name.startsWith('k') && typeof token === 'number') blocked.set(decodeKey(name.slice(1)), token);
    return blocked;
  }

  /** Takes the block off if it is still the one read (`token`). */
  async unblock(queue: string, shard: string, key: string, token: number): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keyBlocksKey(queue, shard),
          UpdateExpression: 'REMOVE #k',
          ConditionExpression: '#k = :t',
          ExpressionAttributeNames: { '#k': keyBlockAttribute(key) },
          ExpressionAttributeValues: { ':t': token },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }
}
