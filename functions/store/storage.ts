import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { buildUpdate } from './expression.js';

/**
 * Bytes a queue holds unconsumed (payloads accepted and not yet acked or purged): one ADD
 * counter per queue, read by the storage quota.
 */
export class StorageMeter {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  private key(queue: string) {
    return { pk: `Q#${queue}#STORE`, sk: 'C' };
  }

  async used(queue: string): Promise<number> {
    const out = await this.doc.send(new GetCommand({ TableName: this.table, Key: this.key(queue) }));
    return Math.max(0, Number(out.Item?.bytes ?? 0));
  }

  async add(queue: string, bytes: number): Promise<void> {
    if (bytes === 0) return;
    await this.doc.send(
      new UpdateCommand({ TableName: this.table, Key: this.key(queue), ...buildUpdate({ add: { bytes } }) }),
    );
  }
}
