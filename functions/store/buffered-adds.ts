import { type DocumentClient, UpdateCommand } from '../aws/dynamodb.js';
import { buildUpdate } from './expression.js';
import type { ItemKey } from './keys.js';

/**
 * ADD counters summed in the function instance and written about once a second: one write per
 * counter item per second per instance, not one per request, so no queue-wide item caps a
 * queue's request rate (DynamoDB takes ~1,000 writes/s per item). What an instance has not
 * written yet is lost with it (a recycled instance, a crash): totals were best effort before
 * (a crash between a change and its counter write lost the count) and stay so; the loss is
 * bounded by one interval of one instance's traffic.
 */
export class BufferedAdds {
  private readonly pending = new Map<string, { key: ItemKey; add: Record<string, number> }>();
  /** What a flush under way is writing: still this instance's to count until it landed. */
  private inflight = new Map<string, { key: ItemKey; add: Record<string, number> }>();
  private lastFlush: number;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
    private readonly intervalMs = 1000,
    private readonly now: () => number = Date.now,
  ) {
    this.lastFlush = now();
  }

  /** Adds to the counter item `key`; writes what is pending once the interval has passed. */
  async add(key: ItemKey, deltas: Record<string, number>): Promise<void> {
    this.accumulate(key, deltas);
    if (this.now() - this.lastFlush >= this.intervalMs) await this.flush();
  }

  private accumulate(key: ItemKey, deltas: Record<string, number>): void {
    const entries = Object.entries(deltas).filter(([, n]) => n !== 0);
    if (!entries.length) return;
    const at = `${key.pk}\u0000${key.sk}`;
    const slot = this.pending.get(at) ?? { key, add: {} };
    for (const [name, n] of entries) slot.add[name] = (slot.add[name] ?? 0) + n;
    this.pending.set(at, slot);
  }

  /**
   * What this instance added to `key` and has not written yet, for readers to add to what they
   * read (a write landing meanwhile may be counted twice for a moment: quotas err on the safe side).
   */
  unwritten(key: ItemKey, name: string): number {
    const at = `${key.pk}\u0000${key.sk}`;
    return (this.pending.get(at)?.add[name] ?? 0) + (this.inflight.get(at)?.add[name] ?? 0);
  }

  /**
   * Writes everything pending now (stats answers call it, so an instance reads its own counts).
   * Never throws: a counter write that fails keeps its counts for the next flush, and the request
   * that triggered it (an ack that landed, say) must not fail for it.
   */
  async flush(): Promise<void> {
    await this.flushing;
    this.lastFlush = this.now();
    const batch = [...this.pending.values()];
    this.inflight = new Map(this.pending);
    this.pending.clear();
    if (!batch.length) return;
    this.flushing = Promise.all(
      batch.map(async ({ key, add }) => {
        try {
          await this.doc.send(
            new UpdateCommand({ TableName: this.table, Key: key, ...buildUpdate({ add }) }),
          );
        } catch {
          this.accumulate(key, add);
        }
      }),
    ).then(() => undefined);
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
      this.inflight = new Map();
    }
  }
}
