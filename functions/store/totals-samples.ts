import { type DocumentClient, GetCommand, UpdateCommand } from '../aws/dynamodb.js';
import type { TotalsSample } from '../core/drain.js';
import type { UsageSample } from '../core/usage-sample.js';
import { buildUpdate, Raw } from './expression.js';
import { totalsSampleKey } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * A queue's latest sample of its running totals (the drain rates' and the usage's,
 * core/usage-sample.ts), and the produced and acked totals of the one before, in one item: each
 * new sample moves the last one's to `previous` in the same write (an update's operands read the
 * item as it was). A write a minute per queue, by the sweep; the item stays under 1 KB, one WRU.
 */
export class TotalsSamples {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  /**
   * Records `sample` after the one taken at `previousAt` (none: the queue's first). Another sweep
   * that sampled meanwhile wins: false, and this sample is dropped, so no interval is integrated twice.
   */
  async record(queue: string, sample: UsageSample, previousAt: number | undefined): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: totalsSampleKey(queue),
          ...buildUpdate({
            set: {
              prev_at: new Raw('if_not_exists(#at, :set_at)'),
              prev_produced: new Raw('if_not_exists(#produced, :set_produced)'),
              prev_acked: new Raw('if_not_exists(#acked, :set_acked)'),
              ...sample,
            },
            condition: previousAt === undefined ? 'attribute_not_exists(#at)' : '#at = :previousAt',
            values: previousAt === undefined ? {} : { ':previousAt': previousAt },
          }),
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  /** The latest two samples' produced and acked totals, and the latest's item (the usage's: usageSampleOf). */
  async get(
    queue: string,
  ): Promise<{ latest?: TotalsSample; previous?: TotalsSample; item?: Record<string, unknown> }> {
    const out = await this.doc.send(new GetCommand({ TableName: this.table, Key: totalsSampleKey(queue) }));
    const item = out.Item;
    if (!item) return {};
    const sample = (at: unknown, produced: unknown, acked: unknown): TotalsSample | undefined =>
      typeof at === 'number' ? { at, produced: Number(produced ?? 0), acked: Number(acked ?? 0) } : undefined;
    const latest = sample(item.at, item.produced, item.acked);
    const previous = sample(item.prev_at, item.prev_produced, item.prev_acked);
    return { ...(latest ? { latest } : {}), ...(previous ? { previous } : {}), item };
  }
}
