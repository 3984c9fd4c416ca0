import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { BufferedAdds } from './buffered-adds.js';
import { storageKey } from './keys.js';

/**
 * Bytes a queue holds unconsumed (payloads accepted and not yet acked or purged): one ADD
 * counter per queue, read by the storage quota, written through BufferedAdds (about once a
 * second per instance). Acks also add to its `acked`, a stats total.
 */
export class StorageMeter {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly buffer: BufferedAdds,
  ) {}

  /** What the queue holds: the stored counter and what this instance has not written yet. */
  async used(queue: string): Promise<number> {
    const key = storageKey(queue);
    const out = await this.doc.send(new GetCommand({ TableName: this.table, Key: key }));
    return Math.max(0, Number(out.Item?.bytes ?? 0) + this.buffer.unwritten(key, 'bytes'));
  }

  add(queue: string, bytes: number): Promise<void> {
    return this.buffer.add(storageKey(queue), { bytes });
  }

  /** `acked` messages free their `bytes`; the same item counts them in the queue's acked total. */
  release(queue: string, bytes: number, acked: number): Promise<void> {
    return this.buffer.add(storageKey(queue), { bytes: -bytes, acked });
  }
}
