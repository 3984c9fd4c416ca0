import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { buildUpdate } from './expression.js';
import { STATS_SHARDS, statsKey, storageKey, windowCounterKey } from './keys.js';
import { retryUnprocessed } from './util.js';

/**
 * Counters: the per-shard window occupancy that dispatch's backpressure reads, and the
 * queue totals of the stats answers. Both are ADDs, so concurrent writers never conflict.
 * Only totals a stats answer shows are kept (the api's metrics count the rest), and `acked`
 * rides on the storage counter write every ack makes anyway (StorageMeter.release).
 */

export type StatName = 'produced' | 'acked' | 'redelivered' | 'stale_receipts' | 'nacked' | 'dead_lettered';

export class Counters {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async window(queue: string, shard: string): Promise<number> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: windowCounterKey(queue, shard), ConsistentRead: true }),
    );
    return Math.max(0, Number(out.Item?.n ?? 0));
  }

  async addWindow(queue: string, shard: string, delta: number): Promise<void> {
    if (delta === 0) return;
    await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: windowCounterKey(queue, shard),
        ...buildUpdate({ add: { n: delta } }),
      }),
    );
  }

  /** Adds to a queue's totals: one write per call, on a random slot of the sharded counter. */
  async addStats(queue: string, deltas: Partial<Record<StatName, number>>): Promise<void> {
    const add = Object.fromEntries(Object.entries(deltas).filter(([, n]) => n)) as Record<string, number>;
    if (!Object.keys(add).length) return;
    const slot = Math.floor(Math.random() * STATS_SHARDS);
    await this.doc.send(
      new UpdateCommand({ TableName: this.table, Key: statsKey(queue, slot), ...buildUpdate({ add }) }),
    );
  }

  /** The queue's totals: its stats slots, and `acked` from its storage counter. */
  async stats(queue: string): Promise<Record<StatName, number>> {
    const totals: Record<string, number> = {};
    const storage = storageKey(queue);
    const keys = [...Array.from({ length: STATS_SHARDS }, (_, slot) => statsKey(queue, slot)), storage];
    await retryUnprocessed(keys, async (pending) => {
      const out = await this.doc.send(
        new BatchGetCommand({ RequestItems: { [this.table]: { Keys: pending } } }),
      );
      for (const item of out.Responses?.[this.table] ?? []) {
        // The storage counter's `bytes` is what the queue holds, not a total.
        const counts = item.pk === storage.pk ? { acked: item.acked } : item;
        for (const [k, v] of Object.entries(counts))
          if (typeof v === 'number') totals[k] = (totals[k] ?? 0) + v;
      }
      return (out.UnprocessedKeys?.[this.table]?.Keys ?? []) as typeof pending;
    });
    return totals as Record<StatName, number>;
  }
}
