import { type DocumentClient, GetCommand, UpdateCommand } from '../aws/dynamodb.js';
import type { TotalsSample } from '../core/drain.js';
import { totalsSampleKey } from './keys.js';

/**
 * The last two samples of a queue's produced and acked totals, in one item: each new sample
 * moves the last one to `previous` in the same write (an update's operands read the item as it
 * was). A write a minute per queue, by the sweep.
 */
export class TotalsSamples {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  async record(queue: string, sample: TotalsSample): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: totalsSampleKey(queue),
        UpdateExpression:
          'SET prev_at = if_not_exists(#at, :at), prev_produced = if_not_exists(#produced, :produced), ' +
          'prev_acked = if_not_exists(#acked, :acked), #at = :at, #produced = :produced, #acked = :acked',
        ExpressionAttributeNames: { '#at': 'at', '#produced': 'produced', '#acked': 'acked' },
        ExpressionAttributeValues: { ':at': sample.at, ':produced': sample.produced, ':acked': sample.acked },
      }),
    );
  }

  async get(queue: string): Promise<{ latest?: TotalsSample; previous?: TotalsSample }> {
    const out = await this.doc.send(new GetCommand({ TableName: this.table, Key: totalsSampleKey(queue) }));
    const item = out.Item;
    if (!item) return {};
    const sample = (at: unknown, produced: unknown, acked: unknown): TotalsSample | undefined =>
      typeof at === 'number' ? { at, produced: Number(produced ?? 0), acked: Number(acked ?? 0) } : undefined;
    const latest = sample(item.at, item.produced, item.acked);
    const previous = sample(item.prev_at, item.prev_produced, item.prev_acked);
    return { ...(latest ? { latest } : {}), ...(previous ? { previous } : {}) };
  }
}
