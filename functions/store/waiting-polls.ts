import { type DocumentClient, UpdateCommand } from '../aws/dynamodb.js';
import { POLL_EPOCH_MS } from '../core/long-polls.js';
import { TTL_ATTRIBUTE, waitingPollsKey } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * The places taken by a queue's waiting receives, one counter item per epoch (core/long-polls.ts),
 * kept until two epochs after its own.
 */
export class WaitingPolls {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  /** Takes a place in `epoch` unless its `places` are all taken. */
  async take(queue: string, epoch: number, places: number): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: waitingPollsKey(queue, epoch),
          UpdateExpression: 'ADD #n :one SET #ttl = :ttl',
          ConditionExpression: 'attribute_not_exists(#n) OR #n < :places',
          ExpressionAttributeNames: { '#n': 'waiting', '#ttl': TTL_ATTRIBUTE },
          ExpressionAttributeValues: {
            ':one': 1,
            ':places': places,
            ':ttl': Math.ceil(((epoch + 3) * POLL_EPOCH_MS) / 1000),
          },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  /** Gives a place back to its epoch: not to an item already gone with it. */
  async giveBack(queue: string, epoch: number): Promise<void> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: waitingPollsKey(queue, epoch),
          UpdateExpression: 'ADD #n :minus',
          ConditionExpression: 'attribute_exists(#n)',
          ExpressionAttributeNames: { '#n': 'waiting' },
          ExpressionAttributeValues: { ':minus': -1 },
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }
}
