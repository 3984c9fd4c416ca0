import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { buildUpdate } from './expression.js';
import { storageKey } from './keys.js';

/**
 * Bytes a queue holds unconsumed (payloads accepted and not yet acked or purged): one ADD
 * counter per queue, read by the storage quota. Acks also add to its `acked`, a stats total.
 */
export class StorageMeter {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async used(queue: string): Promise<number> {
    const out = await this.doc.send(new GetCommand({ TableName: this.table, Key: storageKey(queue) }));
    return Math.max(0, Number(out.Item?.bytes ?? 0));
  }

  async add(queue: string, bytes: number): Promise<void> {
    if (bytes === 0) return;
    await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: storageKey(queue),
        ...buildUpdate({ add: { bytes } }),
      }),
    );
  }

  /** `acked` messages free their `bytes`; the same write counts them in the queue's acked total. */
  async release(queue: string, bytes: number, acked: number): Promise<void> {
    if (acked === 0) return;
    await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: storageKey(queue),
        ...buildUpdate({ add: { bytes: -bytes, acked } }),
      }),
    );
  }
}
