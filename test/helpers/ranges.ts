import type { Range } from '../../functions/core/ranges.js';
import { RangeStore } from '../../functions/store/ranges.js';
import type { TestRuntime } from './runtime.js';

/** A range as the store reads it back, nothing leased or finished but what `over` says. */
export function aRange(start: string, over: Partial<Range> = {}): Range {
  return {
    shard: 'shardId-000000000000',
    start,
    last: start,
    count: 20,
    base: 0,
    enqueuedAt: 0,
    segment: { id: start, offset: 0, store: 'ddb' },
    leases: new Map(),
    acked: new Set(),
    failed: new Set(),
    held: new Set(),
    retrying: new Map(),
    passedOn: new Map(),
    attempts: new Map(),
    ...over,
  };
}

/**
 * Admitted, unfinished entries per shard of `queue` (neither acked nor moved to the retry path or
 * a hold area), read consistently from the shard's commit point on (every range before it is
 * finished), so an entry is never counted twice. Shards are named as the emulator names them.
 */
export async function windowOccupancy(t: TestRuntime, queue: string, shards = 2): Promise<number[]> {
  const ranges = new RangeStore(t.runtime.clients.doc, t.runtime.config.tableName);
  return Promise.all(
    Array.from({ length: shards }, async (_, i) => {
      const shard = `shardId-${String(i).padStart(12, '0')}`;
      const open = await ranges.from(queue, shard, await ranges.commitHint(queue, shard), 100_000, true);
      // An entry acked from its key's hold area is in both: counted finished once.
      return open.reduce((n, r) => n + r.count - new Set([...r.acked, ...r.failed]).size, 0);
    }),
  );
}
