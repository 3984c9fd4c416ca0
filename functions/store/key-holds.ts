import {
  DeleteCommand,
  type DocumentClient,
  PutCommand,
  paginateQuery,
  QueryCommand,
  UpdateCommand,
} from '../aws/dynamodb.js';
import { mapLimit } from '../core/async.js';
import type { Envelope } from '../core/envelope.js';
import { keyHoldKey, keyHoldPk, keyHoldsMarkerKey, keyHoldsMarkerPk, TTL_ATTRIBUTE } from './keys.js';
import { countAll, isConditionFailed } from './util.js';

/**
 * The hold area of an ordered queue's Lambda consumer (docs/ordered-queues.md): the
 * messages of a key that arrived while the key was busy with a retry or parked, in log order,
 * each with its envelope (a held message can wait longer than the log and its segments keep it).
 * Per shard, a marker per key with held messages, so the sweep finds the keys to wake without a
 * scan. Only the exception path writes here.
 */

export interface HeldMessage {
  key: string;
  shard: string;
  /** Where the message's entry was in the log: its place in the key's order. */
  sequence: string;
  /**
   * Its place in the shard's admission order: its entry in the lease layer (store/ranges.ts
   * entryAt), acked there once the message is handled.
   */
  position: number;
  envelope: Envelope;
  /** Deliveries begun from the hold area: more than one means an earlier one never finished. */
  deliveries: number;
}

export interface HoldMarker {
  key: string;
  /** The key's `holding` token when it was marked (store/key-states.ts). */
  token?: number;
  /** When the sweep last appended a wake record for the key. */
  wokenAt?: number;
}

type Item = Record<string, unknown>;

export class KeyHolds {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  /**
   * Holds messages of one key and shard, in any order (the hold area sorts them by log position):
   * their shard's marker first (whoever empties hold areas must find every key that has one), then
   * the items. `token`: the key's `holding` token, written to the key after this.
   */
  async put(
    queue: string,
    held: readonly Omit<HeldMessage, 'deliveries'>[],
    ttl: number,
    token: number,
  ): Promise<void> {
    const first = held[0];
    if (!first) return;
    await this.mark(queue, first.shard, first.key, token);
    await mapLimit(held, 8, (h) => this.putItem(queue, h, ttl));
  }

  private async putItem(queue: string, held: Omit<HeldMessage, 'deliveries'>, ttl: number): Promise<void> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: {
            ...keyHoldKey(queue, held.key, held.sequence),
            key: held.key,
            shard: held.shard,
            seq: held.sequence,
            p: held.position,
            env: JSON.stringify(held.envelope),
            n: 0,
            [TTL_ATTRIBUTE]: ttl,
          },
          // Held already (a batch offered again): its delivery count stays.
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }

  /** Marks the key as one with held messages on its shard. */
  async mark(queue: string, shard: string, key: string, token: number): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: keyHoldsMarkerKey(queue, shard, key),
        UpdateExpression: 'SET #k = :k, #t = :t',
        ExpressionAttributeNames: { '#k': 'key', '#t': 't' },
        ExpressionAttributeValues: { ':k': key, ':t': token },
      }),
    );
  }

  /** The key's first held messages, in log order. */
  async first(queue: string, key: string, limit: number): Promise<HeldMessage[]> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keyHoldPk(queue, key) },
        ConsistentRead: true,
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map(toHeld);
  }

  async has(queue: string, key: string, sequence: string): Promise<boolean> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND sk = :sk',
        ExpressionAttributeValues: {
          ':pk': keyHoldPk(queue, key),
          ':sk': keyHoldKey(queue, key, sequence).sk,
        },
        ConsistentRead: true,
        Select: 'COUNT',
      }),
    );
    return (out.Count ?? 0) > 0;
  }

  count(queue: string, key: string): Promise<number> {
    return countAll(this.doc, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keyHoldPk(queue, key) },
    });
  }

  /** Counts a delivery begun; answers the count, or undefined when the message is no longer held. */
  async begin(queue: string, key: string, sequence: string): Promise<number | undefined> {
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keyHoldKey(queue, key, sequence),
          UpdateExpression: 'ADD n :one',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':one': 1 },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      return Number(out.Attributes?.n);
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  async remove(queue: string, key: string, sequence: string): Promise<void> {
    await this.doc.send(new DeleteCommand({ TableName: this.table, Key: keyHoldKey(queue, key, sequence) }));
  }

  /** Keys with held messages on a shard (their markers). */
  async marked(queue: string, shard: string): Promise<HoldMarker[]> {
    const markers: HoldMarker[] = [];
    const pages = paginateQuery(this.doc, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keyHoldsMarkerPk(queue, shard) },
    });
    for await (const page of pages)
      for (const item of page.Items ?? [])
        markers.push({
          key: String(item.key),
          ...(typeof item.t === 'number' ? { token: item.t } : {}),
          ...(typeof item.w === 'number' ? { wokenAt: item.w } : {}),
        });
    return markers;
  }

  async woke(queue: string, shard: string, key: string, now: number): Promise<void> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keyHoldsMarkerKey(queue, shard, key),
          UpdateExpression: 'SET w = :w',
          // Unmarked meanwhile (its hold area was emptied): not written back without its key.
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':w': now },
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }

  /**
   * The key's hold area was found empty: its marker goes; with `token`, only if nobody marked it
   * since (admission holds messages while receivers empty the hold area).
   */
  async unmark(queue: string, shard: string, key: string, token?: number): Promise<void> {
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.table,
          Key: keyHoldsMarkerKey(queue, shard, key),
          ...(token !== undefined
            ? {
                ConditionExpression: 'attribute_not_exists(#t) OR #t = :t',
                ExpressionAttributeNames: { '#t': 't' },
                ExpressionAttributeValues: { ':t': token },
              }
            : {}),
        }),
      );
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
    }
  }
}

function toHeld(item: Item): HeldMessage {
  return {
    key: String(item.key),
    shard: String(item.shard),
    sequence: String(item.seq),
    position: Number(item.p),
    envelope: JSON.parse(String(item.env)) as Envelope,
    deliveries: Number(item.n ?? 0),
  };
}
