import { DeleteCommand, type DocumentClient, PutCommand, QueryCommand } from '../aws/dynamodb.js';
import { TTL_ATTRIBUTE, wakePk } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * Who waits on the wake channel for a queue's next admission: one small item per connection, in
 * one partition per queue. A receive that found nothing puts it; the admission that next writes
 * free entries takes every item with a conditional delete, and only the taker posts its wake, so
 * two admissions at once wake a connection once. An item outlives a lost connection by its TTL at
 * most (API Gateway closes a connection after 2 hours).
 */

const KEEP_SECONDS = 2 * 60 * 60;

export class WakeRegistrations {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  async register(queue: string, connection: string, now: number): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: { pk: wakePk(queue), sk: connection, [TTL_ATTRIBUTE]: Math.ceil(now / 1000) + KEEP_SECONDS },
      }),
    );
  }

  /**
   * The connections registered for the queue, each taken (deleted) by this call alone. Read
   * consistently: a receive registers just before its last look, and an admission right after
   * that look must see it.
   */
  async take(queue: string): Promise<string[]> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': wakePk(queue) },
        ProjectionExpression: 'sk',
        ConsistentRead: true,
      }),
    );
    const connections = (out.Items ?? []).map((item) => String(item.sk));
    const taken = await Promise.all(
      connections.map(async (connection) => {
        try {
          await this.doc.send(
            new DeleteCommand({
              TableName: this.table,
              Key: { pk: wakePk(queue), sk: connection },
              ConditionExpression: 'attribute_exists(pk)',
            }),
          );
          return connection;
        } catch (err) {
          if (isConditionFailed(err)) return undefined;
          throw err;
        }
      }),
    );
    return taken.filter((c): c is string => c !== undefined);
  }
}
