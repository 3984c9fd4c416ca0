import type { Range } from '../../functions/core/ranges.js';

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
