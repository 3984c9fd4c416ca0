import { DeleteCommand, type DocumentClient, PutCommand, QueryCommand } from '../aws/dynamodb.js';
import { FAN_OUT_QUIET_PK } from './keys.js';

/**
 * Since when each stream on busy-time fan-out has been quiet with its consumer there
 * (core/fan-out-switch.ts), an item a stream: kept in the table, not in the sweep's memory, so a
 * new sweep instance does not start the quiet hour again and keep a consumer for good.
 */
export class FanOutQuiet {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  /** By stream name. */
  async all(): Promise<Map<string, number>> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': FAN_OUT_QUIET_PK },
        ConsistentRead: true,
      }),
    );
    return new Map((out.Items ?? []).map((item) => [item.sk as string, Number(item.since)]));
  }

  /** A stream's quiet start; undefined: it is not quiet. */
  async set(stream: string, since: number | undefined): Promise<void> {
    const key = { pk: FAN_OUT_QUIET_PK, sk: stream };
    if (since === undefined) await this.doc.send(new DeleteCommand({ TableName: this.table, Key: key }));
    else await this.doc.send(new PutCommand({ TableName: this.table, Item: { ...key, since } }));
  }
}
