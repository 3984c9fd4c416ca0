import { type DocumentClient, GetCommand, PutCommand } from '../aws/dynamodb.js';
import { expiryMarkKey } from './keys.js';

/** Per shard, the last record the expiry watch counted (sweep/expiry-watch.ts): each is counted once. */
export class ExpiryMarks {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  async get(queue: string, shard: string): Promise<string | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: expiryMarkKey(queue, shard), ConsistentRead: true }),
    );
    return typeof out.Item?.seq === 'string' ? out.Item.seq : undefined;
  }

  async set(queue: string, shard: string, sequence: string): Promise<void> {
    await this.doc.send(
      new PutCommand({ TableName: this.table, Item: { ...expiryMarkKey(queue, shard), seq: sequence } }),
    );
  }
}
