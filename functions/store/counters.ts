import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { buildUpdate } from './expression.js';
import { STATS_SHARDS, statsKey, windowCounterKey } from './keys.js';

/**
 * Counters: the per-shard window occupancy that dispatch's backpressure reads, and the
 * queue totals of the stats endpoint. Both are ADDs, so concurrent writers never conflict.
 */

export type StatName =
  | 'produced'
  | 'duplicate'
  | 'received'
  | 'acked'
  | 'nacked'
  | 'redelivered'
  | 'stale_receipts'
  | 'dead_lettered';

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

  async stats(queue: string): Promise<Record<StatName, number>> {
    const totals: Record<string, number> = {};
    const items = await Promise.all(
      Array.from({ length: STATS_SHARDS }, (_, slot) =>
        this.doc.send(new GetCommand({ TableName: this.table, Key: statsKey(queue, slot) })),
      ),
    );
    for (const out of items) {
      for (const [k, v] of Object.entries(out.Item ?? {}))
        if (typeof v === 'number') totals[k] = (totals[k] ?? 0) + v;
    }
    return totals as Record<StatName, number>;
  }
}
