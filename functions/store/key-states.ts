import { BatchGetCommand, type DocumentClient, QueryCommand, UpdateCommand } from '../aws/dynamodb.js';
import { writeToken } from '../core/ids.js';
import { buildKeyCondition, buildUpdate, Raw } from './expression.js';
import { GSI1, gsi, keyStateKey, timeSortKey } from './keys.js';
import { isConditionFailed, retryUnprocessed } from './util.js';

/**
 * Per-key ordering state of an ordered queue: the one message that holds the key (leased,
 * delayed or on its way back through the log), or that the key is parked behind a dead
 * message. Every change is one conditional write on the key's own item.
 */

export interface KeyState {
  key: string;
  busy_with?: string;
  parked_at?: number;
  dead_message_id?: string;
  shard?: string;
  /**
   * The key has messages in its hold area (store/key-holds.ts), which go before any newer message
   * of the key. A token: who empties the hold area clears it only if nobody held more since.
   */
  holding?: number;
  /** Ordered pull queues: the lease of the held message that holds the key (`busy_with`). */
  lease_expires_at?: number;
  lease_delivered_at?: number;
  lease_consumer?: string;
  /** Deliveries from the hold area so far: a held delivery's receipt generation. */
  lease_gen?: number;
  /**
   * The ack of held delivery `acking` ended its lease and is finishing (its range, the key's
   * release, the hold item): the sweep finishes it if the ack stopped, rather than fail it.
   */
  acking?: number;
}

export interface HeldLease {
  expiresAt: number;
  deliveredAt: number;
  consumerId?: string;
}

const LEASE_ATTRIBUTES = ['lease_expires_at', 'lease_delivered_at', 'lease_consumer'];

/** The held message's lease `:g` holds the key and is live at `:now`. */
const HELD_LIVE = '#busy_with = :m AND #lease_gen = :g AND #lease_expires_at > :now';
const HELD_EXPIRED = '#busy_with = :m AND #lease_gen = :g AND #lease_expires_at <= :now';

export class KeyStates {
  constructor(
    private readonly doc: DocumentClient,
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

  /**
   * Takes the key for `messageId` when it is free (or already that message's). Answers `taken`
   * when this write took it, `already` when the message held it before, undefined when neither.
   */
  async claim(queue: string, key: string, messageId: string): Promise<'taken' | 'already' | undefined> {
    const before = await this.write(
      queue,
      key,
      {
        set: { key, busy_with: messageId },
        condition:
          '(attribute_not_exists(#busy_with) OR #busy_with = :m) AND attribute_not_exists(#parked_at)',
        values: { ':m': messageId },
      },
      'ALL_OLD',
    );
    if (!before) return undefined;
    return before.busy_with === messageId ? 'already' : 'taken';
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
  async setHolding(queue: string, key: string, token = writeToken()): Promise<number> {
    await this.update(queue, key, { set: { key, holding: token } });
    return token;
  }

  /**
   * The hold area was found empty. With the token read before it was found so, only if no message
   * was held since and no held message holds the key (an ordered pull queue, where admission holds
   * messages while receivers empty the hold area).
   */
  clearHolding(queue: string, key: string, token?: number): Promise<boolean> {
    return this.update(queue, key, {
      remove: ['holding'],
      ...(token !== undefined
        ? { condition: '#holding = :t AND attribute_not_exists(#busy_with)', values: { ':t': token } }
        : {}),
    });
  }

  /**
   * A receiver takes the key for its first held message: free, not parked, with a hold area.
   * Answers the lease's generation, or undefined.
   */
  async claimHeld(
    queue: string,
    key: string,
    messageId: string,
    lease: HeldLease,
  ): Promise<number | undefined> {
    const out = await this.write(
      queue,
      key,
      {
        set: {
          busy_with: messageId,
          lease_expires_at: lease.expiresAt,
          lease_delivered_at: lease.deliveredAt,
          lease_consumer: lease.consumerId,
          lease_gen: new Raw('if_not_exists(#lease_gen, :zero) + :one', { ':zero': 0, ':one': 1 }),
        },
        condition:
          'attribute_exists(#holding) AND attribute_not_exists(#parked_at) AND attribute_not_exists(#busy_with)',
      },
      'ALL_NEW',
    );
    return out?.lease_gen;
  }

  /**
   * Ends the lease `generation` of the held message holding the key: released (its ack) or kept by
   * it (a failure with a retry to come). `lease`: whether the lease must be live (a receipt's) or
   * run out (the sweep's). False when the lease is not so.
   */
  endHeld(
    queue: string,
    key: string,
    messageId: string,
    generation: number,
    now: number,
    how: { release: boolean; lease: 'live' | 'expired'; acking?: boolean },
  ): Promise<boolean> {
    return this.update(queue, key, {
      ...(how.acking ? { set: { acking: generation } } : {}),
      remove: [...LEASE_ATTRIBUTES, ...(how.release ? ['busy_with'] : [])],
      condition: how.lease === 'live' ? HELD_LIVE : HELD_EXPIRED,
      values: { ':m': messageId, ':g': generation, ':now': now },
    });
  }

  /** Frees the key once the ack of held delivery `generation` (which ended its lease) is written. */
  finishAck(queue: string, key: string, messageId: string, generation: number): Promise<boolean> {
    return this.update(queue, key, {
      remove: ['busy_with', 'acking'],
      condition: '#busy_with = :m AND #acking = :g',
      values: { ':m': messageId, ':g': generation },
    });
  }

  extendHeld(
    queue: string,
    key: string,
    messageId: string,
    generation: number,
    expiresAt: number,
    now: number,
  ): Promise<boolean> {
    return this.update(queue, key, {
      set: { lease_expires_at: expiresAt },
      condition: HELD_LIVE,
      values: { ':m': messageId, ':g': generation, ':now': now },
    });
  }

  /** The holder was dead-lettered: its key is parked until a redrive or a skip. */
  park(queue: string, key: string, messageId: string, shard: string, now: number): Promise<boolean> {
    return this.update(queue, key, {
      set: {
        key,
        parked_at: now,
        dead_message_id: messageId,
        shard,
        gsi1pk: gsi.parked(queue),
        gsi1sk: timeSortKey(now, messageId),
      },
      remove: ['busy_with', ...LEASE_ATTRIBUTES],
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
    returnValues: 'NONE' | 'ALL_OLD' | 'ALL_NEW',
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
