import { BatchGetCommand, type DocumentClient } from '../aws/dynamodb.js';
import { type RequestKind, requestCounter } from '../core/request-kinds.js';
import type { HandlingCount } from '../observability/queue-alarms.js';
import type { BufferedAdds } from './buffered-adds.js';
import { STATS_SHARDS, statsKey, storageKey } from './keys.js';
import { retryUnprocessed } from './util.js';

/**
 * Counters: the per-shard window occupancy that dispatch's backpressure reads, and the
 * queue totals of the stats answers. Both are ADDs, so concurrent writers never conflict.
 * Only totals a stats or usage answer shows are kept (the api's metrics count the rest). `acked`
 * rides on the storage counter write every ack makes anyway (StorageMeter.release), and so do the
 * requests by kind: produce and ack, most of a queue's requests, write that item each flush anyway.
 */

export type StatName =
  | 'produced'
  | 'acked'
  | 'redelivered'
  | 'stale_receipts'
  | 'nacked'
  | 'dead_lettered'
  | 'expired_unprocessed'
  /** Requests refused over a quota (429), beside `throttled@<key name>` per API key. */
  | 'throttled';

/**
 * A queue's totals, its 429s by the name of the API key that was refused, and every running total
 * by its attribute (`all`: the usage's bytes and requests beside the stats' counts).
 */
export type Totals = Record<StatName, number> & {
  throttledByKey: Record<string, number>;
  all: Record<string, number>;
};

const BY_KEY = 'throttled@';

export class Counters {
  /** This instance's slot of the sharded totals: instances spread over the slots. */
  private readonly slot = Math.floor(Math.random() * STATS_SHARDS);

  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
    private readonly buffer: BufferedAdds,
  ) {}

  /** Adds to a queue's totals, written with this instance's other counts about once a second. */
  addStats(queue: string, deltas: Partial<Record<StatName, number>>): Promise<void> {
    return this.buffer.add(statsKey(queue, this.slot), deltas as Record<string, number>);
  }

  /** A request refused over a quota: the queue's total and the refused key's. */
  addThrottled(queue: string, keyName: string): Promise<void> {
    return this.buffer.add(statsKey(queue, this.slot), { throttled: 1, [`${BY_KEY}${keyName}`]: 1 });
  }

  /**
   * What the alarms' rates divide by (observability/queue-alarms.ts): messages delivered, and
   * handlers finished (`slow_handled`: those past half their lease). On the storage counter item,
   * which the receive's request count and the ack's bytes write about once a second anyway.
   */
  addHandling(queue: string, counts: Partial<Record<HandlingCount, number>>): Promise<void> {
    return this.buffer.add(storageKey(queue), counts as Record<string, number>);
  }

  /**
   * A request on the queue, by kind (GET /usage): on the storage counter item, in the same
   * buffered write as the bytes a produce or an ack adds there.
   */
  addRequest(queue: string, kind: RequestKind): Promise<void> {
    return this.buffer.add(storageKey(queue), { [requestCounter(kind)]: 1 });
  }

  /** Writes this instance's pending counts now: a function that may be frozen after an invocation calls it. */
  flush(): Promise<void> {
    return this.buffer.flush();
  }

  /** The queue's totals: its stats slots, and the running totals of its storage counter. */
  async stats(queue: string): Promise<Totals> {
    await this.buffer.flush();
    const totals: Record<string, number> = {};
    const storage = storageKey(queue);
    const keys = [...Array.from({ length: STATS_SHARDS }, (_, slot) => statsKey(queue, slot)), storage];
    await retryUnprocessed(keys, async (pending) => {
      const out = await this.doc.send(
        new BatchGetCommand({ RequestItems: { [this.table]: { Keys: pending } } }),
      );
      for (const item of out.Responses?.[this.table] ?? []) {
        // The storage counter's `bytes` (`bytes@<consumer>`) is what the queue holds, not a total.
        for (const [k, v] of Object.entries(item))
          if (typeof v === 'number' && !(item.pk === storage.pk && isHeldBytes(k)))
            totals[k] = (totals[k] ?? 0) + v;
      }
      return (out.UnprocessedKeys?.[this.table]?.Keys ?? []) as typeof pending;
    });
    const throttledByKey: Record<string, number> = {};
    for (const [k, v] of Object.entries(totals))
      if (k.startsWith(BY_KEY)) throttledByKey[k.slice(BY_KEY.length)] = v;
    return { ...(totals as Record<StatName, number>), throttledByKey, all: totals };
  }
}

function isHeldBytes(attribute: string): boolean {
  return attribute === 'bytes' || attribute.startsWith('bytes@');
}
