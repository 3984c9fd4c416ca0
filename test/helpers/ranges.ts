import { expect } from 'vitest';
import { QueryCommand } from '../../functions/aws/dynamodb.js';
import type { Range } from '../../functions/core/ranges.js';
import { rangesPk } from '../../functions/store/keys.js';
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
 * a hold area), read in one consistent Query of each shard's ranges so an entry is never counted
 * twice. Shards are named as the emulator names them, `shardId-000000000000` on.
 */
export async function windowOccupancy(t: TestRuntime, queue: string, shards = 2): Promise<number[]> {
  // An entry acked from its key's hold area is in both A and F: counted finished once.
  const finished = (item: Record<string, unknown>) =>
    new Set([...(item.A instanceof Set ? item.A : []), ...(item.F instanceof Set ? item.F : [])]).size;
  return Promise.all(
    Array.from({ length: shards }, async (_, i) => {
      const out = await t.runtime.clients.doc.send(
        new QueryCommand({
          TableName: t.runtime.config.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': rangesPk(queue, `shardId-${String(i).padStart(12, '0')}`) },
          ConsistentRead: true,
        }),
      );
      expect(out.LastEvaluatedKey).toBeUndefined();
      return (out.Items ?? []).reduce((n, item) => n + item.n - finished(item), 0);
    }),
  );
}
