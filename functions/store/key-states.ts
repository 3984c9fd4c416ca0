import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { buildKeyCondition, buildUpdate } from './expression.js';
import { GSI1, gsi, keyStateKey, timeSortKey } from './keys.js';
import { isConditionFailed, retryUnprocessed } from './util.js';

/**
 * Per-key ordering state of an ordered queue: the one message that holds the key (leased,
 * delayed or on its way back through the log), or that the key is parked behind a dead
 * message. Every change is one conditional write on the key's own item.
 */

export interface KeyState {
  key: string;
  /** The last message of the key admitted from the log: the next one's `prev`. */
  tail?: string;
  busy_with?: string;
  parked_at?: number;
  dead_message_id?: string;
  shard?: string;
  /**
   * Lambda consumers on the lease layer: the key has messages in its hold area (store/key-holds.ts),
   * which go before any newer message of the key.
   */
  holding?: boolean;
}

export class KeyStates {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async getMany(queue: string, keys: readonly string[]): Promise<Map<string, KeyState>> {
    const out = new Map<string, KeyState>();
    const unique = [...new Set(keys)];
    for (let i = 0; i < unique.length; i += 100) {
      const batch = unique.slice(i, i + 100).map((k) => keyStateKey(queue, k));
      await retryUnprocessed(batch, async (pending) => {
        const res = await this.doc.send(
          new BatchGetCommand({ RequestItems: { [this.table]: { Keys: pending, ConsistentRead: true } } }),
        );
        for (const item of res.Responses?.[this.table] ?? []) out.set(String(item.key), item as KeyState);
        return (res.UnprocessedKeys?.[this.table]?.Keys ?? []) as typeof pending;
      });
    }
    return out;
  }

  /** Parked keys of a queue, oldest first. */
  async parked(queue: string): Promise<KeyState[]> {
    const out: KeyState[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const res = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: GSI1,
          ...buildKeyCondition('#gsi1pk = :pk', { ':pk': gsi.parked(queue) }),
          ExclusiveStartKey: start,
        }),
      );
      out.push(...((res.Items ?? []) as KeyState[]));
      start = res.LastEvaluatedKey;
    } while (start);
    return out;
  }

  /** Dispatch alone writes the tail, one invocation per shard at a time. */
  setTail(queue: string, key: string, messageId: string): Promise<boolean> {
    return this.update(queue, key, { set: { key, tail: messageId } });
  }

  /** Takes the key for `messageId` when it is free (or already that message's). */
  claim(queue: string, key: string, messageId: string): Promise<boolean> {
    return this.update(queue, key, {
      set: { key, busy_with: messageId },
      condition: '(attribute_not_exists(#busy_with) OR #busy_with = :m) AND attribute_not_exists(#parked_at)',
      values: { ':m': messageId },
    });
  }

  /**
   * The holder is done (acked): the key is free for the next message. Answers the key's state
   * before the release, or undefined when the message did not hold the key.
   */
  async release(queue: string, key: string, messageId: string): Promise<KeyState | undefined> {
    return this.write(
      queue,
      key,
      { remove: ['busy_with'], condition: '#busy_with = :m', values: { ':m': messageId } },
      'ALL_OLD',
    );
  }

  /** Set before the key's first held message is written, so no reader of the key misses the hold area. */
  setHolding(queue: string, key: string): Promise<boolean> {
    return this.update(queue, key, { set: { key, holding: true } });
  }

  /** The hold area was found empty. */
  clearHolding(queue: string, key: string): Promise<boolean> {
    return this.update(queue, key, { remove: ['holding'] });
  }

  /** The holder was dead-lettered: its key is parked until a redrive or a skip. */
  park(queue: string, key: string, messageId: string, shard: string, now: number): Promise<boolean> {
    return this.update(queue, key, {
      set: {
        parked_at: now,
        dead_message_id: messageId,
        shard,
        gsi1pk: gsi.parked(queue),
        gsi1sk: timeSortKey(now, messageId),
      },
      remove: ['busy_with'],
      condition: '#busy_with = :m OR (attribute_not_exists(#busy_with) AND attribute_not_exists(#parked_at))',
      values: { ':m': messageId },
    });
  }

  /** Ends parking: free (skip), or held by the redriven dead message so it goes first. */
  unpark(queue: string, key: string, deadMessageId: string, busyWith?: string): Promise<boolean> {
    return this.update(queue, key, {
      set: { busy_with: busyWith },
      remove: ['parked_at', 'dead_message_id', 'gsi1pk', 'gsi1sk', ...(busyWith ? [] : ['busy_with'])],
      condition: '#dead_message_id = :d',
      values: { ':d': deadMessageId },
    });
  }

  private async update(
    queue: string,
    key: string,
    spec: Parameters<typeof buildUpdate>[0],
  ): Promise<boolean> {
    return (await this.write(queue, key, spec, 'NONE')) !== undefined;
  }

  /** One conditional write: the attributes asked for, or undefined when the condition failed. */
  private async write(
    queue: string,
    key: string,
    spec: Parameters<typeof buildUpdate>[0],
    returnValues: 'NONE' | 'ALL_OLD',
  ): Promise<KeyState | undefined> {
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keyStateKey(queue, key),
          ReturnValues: returnValues,
          ...buildUpdate(spec),
        }),
      );
      return (out.Attributes ?? {}) as KeyState;
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }
}
