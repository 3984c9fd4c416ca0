import type { PutCommandInput } from '@aws-sdk/lib-dynamodb';
import { type DocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '../aws/dynamodb.js';
import { KEY_TAG_CHARS } from '../core/ordering.js';
import { consumerTag, type Lease, type Range, type Retrying, withLeases } from '../core/ranges.js';
import { rangeCursorKey, rangesPk, seqSortKey, TTL_ATTRIBUTE } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * The ranges of the lease layer in DynamoDB: one item per range (< 1 KB, so each write is one
 * unit), no index. A lease, an ack, an extend and a failure are each one conditional write on
 * the range, guarded per entry, so receivers taking different entries of one range never fail
 * each other's writes. Item attributes are short: DynamoDB bills the whole item per write.
 *
 *   l last sequence · n entries · b entries before it on the shard · t earliest enqueue time
 *   sg/so/ss segment id, offset, store · E entry → lease expiry · O entry → "<delivered>.<tag>"
 *   C consumer tag → consumer id · A acked entries · at time of the latest ack
 *   F entries finished onto the retry path (or at admission: held, delayed, passed over)
 *   H entries finished into their key's hold area whose messages are still to deliver from there
 *   R<entry> a nacked entry waiting for its retry: "w<due>" (base 36; its lease's `E` and `O`
 *     removed, so no ack or extend of it lands: the message's history item keeps the delivery),
 *     then its pass-on mark (passOnMark) once its retry entry was admitted, or "x" once it moved
 *     to the delay store. An ordered queue retries in place: "w<due>.<attempt>" while it waits,
 *     "a<attempt>" once delivered again. Top-level attributes: a write can set them on items that
 *     never had one.
 *   K an ordered queue's key tags, one per entry, KEY_TAG_CHARS each
 */

export type NewRange = Omit<
  Range,
  'leases' | 'acked' | 'failed' | 'held' | 'retrying' | 'passedOn' | 'attempts'
>;

/** What a retry's mark is set to when the gap cap moves it to the message's item instead. */
const MOVED_MARK = 'x';

export interface NewLease {
  expiresAt: number;
  deliveredAt: number;
  consumerId?: string;
}

type Item = Record<string, unknown>;

export class RangeStore {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  /**
   * Writes a new range once and answers it as written; undefined when a range already starts
   * there (a retried admission).
   * `finished` entries are finished from the start (delayed, passed over); `waiting` ones (an
   * ordered queue's, produced with a delay) wait in place until their time; `leases` are written
   * as a lease write would (receivers that waited for the range: admitted-signal.ts).
   */
  async create(
    queue: string,
    range: NewRange,
    ttl: number,
    entries: NewEntries = {},
  ): Promise<Range | undefined> {
    const input: PutCommandInput = {
      TableName: this.table,
      Item: newRangeItem(queue, range, ttl, entries),
      ConditionExpression: 'attribute_not_exists(pk)',
    };
    const written = await this.conditional(new PutCommand(input));
    return written === undefined ? undefined : toRange(range.shard, input.Item as Item);
  }

  /** The last range of a shard (read consistently: admission decides from it what is new). */
  async head(queue: string, shard: string): Promise<Range | undefined> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': rangesPk(queue, shard) },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    return out.Items?.[0] ? toRange(shard, out.Items[0]) : undefined;
  }

  /** The range that holds the entry at `sequence`, if it was admitted. */
  async containing(queue: string, shard: string, sequence: string): Promise<Range | undefined> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND sk <= :seq',
        ExpressionAttributeValues: { ':pk': rangesPk(queue, shard), ':seq': seqSortKey(sequence) },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    const item = out.Items?.[0];
    if (!item) return undefined;
    const range = toRange(shard, item);
    return seqSortKey(range.last) >= seqSortKey(sequence) ? range : undefined;
  }

  /**
   * The entry at `sequence`, whose place in the shard's admission order is `position` (a range's
   * `base` plus the entry's index): where it is whichever admitter cut the ranges. Undefined when
   * it is not admitted yet, or its range is gone (finished, below the commit point).
   */
  async entryAt(
    queue: string,
    shard: string,
    at: { sequence: string; position: number },
  ): Promise<{ range: Range; index: number } | undefined> {
    const range = await this.containing(queue, shard, at.sequence);
    return range && { range, index: at.position - range.base };
  }

  /** Ranges from `start` on (inclusive), oldest first, at most `limit`. */
  async from(
    queue: string,
    shard: string,
    start: string | undefined,
    limit: number,
    consistent = false,
  ): Promise<Range[]> {
    const ranges: Range[] = [];
    let exclusive: Record<string, unknown> | undefined;
    do {
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: start ? 'pk = :pk AND sk >= :start' : 'pk = :pk',
          ExpressionAttributeValues: {
            ':pk': rangesPk(queue, shard),
            ...(start ? { ':start': seqSortKey(start) } : {}),
          },
          Limit: limit - ranges.length,
          ConsistentRead: consistent,
          ExclusiveStartKey: exclusive,
        }),
      );
      for (const item of out.Items ?? []) ranges.push(toRange(shard, item));
      exclusive = out.LastEvaluatedKey;
    } while (exclusive && ranges.length < limit);
    return ranges;
  }

  async get(queue: string, shard: string, start: string): Promise<Range | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: rangesPk(queue, shard), sk: seqSortKey(start) },
        ConsistentRead: true,
      }),
    );
    return out.Item ? toRange(shard, out.Item) : undefined;
  }

  /** Where the shard's commit point was last seen: every range before it is finished. */
  async commitHint(queue: string, shard: string): Promise<string | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: rangeCursorKey(queue, shard) }),
    );
    return typeof out.Item?.commit === 'string' ? out.Item.commit : undefined;
  }

  /** Moves the hint forward (never back: the commit point only advances). */
  async advanceCommitHint(queue: string, shard: string, start: string): Promise<void> {
    await this.conditional(
      new UpdateCommand({
        TableName: this.table,
        Key: rangeCursorKey(queue, shard),
        UpdateExpression: 'SET #c = :c, #s = :s',
        ConditionExpression: 'attribute_not_exists(#s) OR #s < :s',
        ExpressionAttributeNames: { '#c': 'commit', '#s': 'commit_sk' },
        ExpressionAttributeValues: { ':c': start, ':s': seqSortKey(start) },
      }),
    );
  }

  /**
   * Leases what is still free among `indexes` of one range, in one write that fails only when none
   * is (or one waits for its retry): receivers whose picks overlap because they looked at once each
   * get the entries the other did not take, instead of one of them losing the write (a unit) and
   * the look. Answers the range as written and the entries this lease won, read from the item as
   * it was before the write (an entry whose lease was there already was not taken by it).
   */
  async leaseFree(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    indexes: readonly number[],
    lease: NewLease,
  ): Promise<{ range: Range; won: number[] } | undefined> {
    const names: Record<string, string> = { '#E': 'E', '#O': 'O' };
    const values: Record<string, unknown> = { ':e': lease.expiresAt, ':o': leaseStamp(lease) };
    const set: string[] = [];
    const waiting: string[] = [];
    const free: string[] = [];
    indexes.forEach((index, k) => {
      names[`#k${k}`] = String(index);
      names[`#r${k}`] = retryAttribute(index);
      set.push(`#E.#k${k} = if_not_exists(#E.#k${k}, :e)`, `#O.#k${k} = if_not_exists(#O.#k${k}, :o)`);
      waiting.push(`attribute_not_exists(#r${k})`);
      free.push(`attribute_not_exists(#E.#k${k})`);
    });
    keepConsumerId(lease, { names, values, set });
    const out = await this.conditional(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: rangesPk(queue, range.shard), sk: seqSortKey(range.start) },
        UpdateExpression: `SET ${set.join(', ')}`,
        ConditionExpression: ['attribute_exists(pk)', ...waiting, `(${free.join(' OR ')})`].join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_OLD',
      }),
    );
    if (!out?.Attributes) return undefined;
    const before = toRange(range.shard, out.Attributes);
    const won = indexes.filter((index) => !before.leases.has(index));
    return { range: withLeases(before, won, lease), won };
  }

  /** Leases free entries of one range: all or none. Undefined when one was taken meanwhile. */
  lease(
    queue: string,
    range: Range,
    indexes: readonly number[],
    lease: NewLease,
  ): Promise<Range | undefined> {
    return this.writeLeases(queue, range, indexes, lease, {
      condition: (k) => `attribute_not_exists(#E.#k${k})`,
      stamp: () => leaseStamp(lease),
    });
  }

  /**
   * An ordered queue's lease write: `free` entries and `due` retries waiting in place (each as its
   * wait was read), all or none, each still unfinished. All or none, because a receiver holding a
   * key's later entry but not its first would break the key's order; unfinished, because the sweep
   * moves a blocked key's entries into its hold area by finishing them here.
   */
  leaseOrdered(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    free: readonly number[],
    due: readonly { index: number; retry: Retrying }[],
    lease: NewLease,
  ): Promise<Range | undefined> {
    const names: Record<string, string> = { '#E': 'E', '#O': 'O', '#A': 'A', '#F': 'F' };
    const values: Record<string, unknown> = { ':e': lease.expiresAt, ':o': leaseStamp(lease) };
    const set: string[] = [];
    const cond: string[] = ['attribute_exists(pk)'];
    const all = [...free.map((index) => ({ index, retry: undefined })), ...due];
    all.forEach(({ index, retry }, k) => {
      names[`#k${k}`] = String(index);
      names[`#r${k}`] = retryAttribute(index);
      values[`:v${k}`] = index;
      set.push(`#E.#k${k} = :e`, `#O.#k${k} = :o`);
      const waits = retry ? `#r${k} = :w${k}` : `(attribute_not_exists(#r${k}) OR begins_with(#r${k}, :a))`;
      if (retry) {
        values[`:w${k}`] = waitMark(retry.dueAt, retry.attempt);
        values[`:n${k}`] = `a${retry.attempt ?? 1}`;
        set.push(`#r${k} = :n${k}`);
      } else values[':a'] = 'a';
      cond.push(`attribute_not_exists(#E.#k${k}) AND ${waits} AND ${unfinishedCondition(k)}`);
    });
    return this.writeLease(queue, range, lease, { set, cond, names, values });
  }

  /**
   * Takes over leases an earlier invocation of a Lambda consumer left (the event source retries a
   * batch only once the invocation before is over, so that one crashed or timed out), each where
   * it is still the lease read in `range`, counting the takeover in its stamp. All or none.
   */
  takeOver(
    queue: string,
    range: Range,
    indexes: readonly number[],
    lease: NewLease,
  ): Promise<Range | undefined> {
    const old = (index: number) => range.leases.get(index);
    const values: Record<string, unknown> = {};
    indexes.forEach((index, k) => {
      values[`:p${k}`] = leaseStamp(old(index) ?? { deliveredAt: 0, expiresAt: 0 });
      values[`:v${k}`] = index;
    });
    return this.writeLeases(queue, range, indexes, lease, {
      condition: (k) => `#O.#k${k} = :p${k} AND ${unfinishedCondition(k)}`,
      stamp: (index) => leaseStamp({ ...lease, takeovers: (old(index)?.takeovers ?? 0) + 1 }),
      names: { '#A': 'A', '#F': 'F' },
      values,
    });
  }

  /** One write of `lease` on entries of a range, each under its own condition; all or none. */
  private writeLeases(
    queue: string,
    range: Range,
    indexes: readonly number[],
    lease: NewLease,
    how: {
      condition: (k: number) => string;
      stamp: (index: number) => string;
      names?: Record<string, string>;
      values?: Record<string, unknown>;
    },
  ): Promise<Range | undefined> {
    const names: Record<string, string> = { ...how.names, '#E': 'E', '#O': 'O' };
    const values: Record<string, unknown> = { ...how.values, ':e': lease.expiresAt };
    const set: string[] = [];
    const cond: string[] = ['attribute_exists(pk)'];
    indexes.forEach((index, k) => {
      names[`#k${k}`] = String(index);
      names[`#r${k}`] = retryAttribute(index);
      values[`:o${k}`] = how.stamp(index);
      set.push(`#E.#k${k} = :e`, `#O.#k${k} = :o${k}`);
      cond.push(`${how.condition(k)} AND attribute_not_exists(#r${k})`);
    });
    return this.writeLease(queue, range, lease, { set, cond, names, values });
  }

  /** A lease write: `set` and `cond` joined, the lease's consumer id kept once per range. */
  private writeLease(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    lease: NewLease,
    w: { set: string[]; cond: string[]; names: Record<string, string>; values: Record<string, unknown> },
  ): Promise<Range | undefined> {
    keepConsumerId(lease, w);
    return this.update(queue, range, {
      UpdateExpression: `SET ${w.set.join(', ')}`,
      ConditionExpression: w.cond.join(' AND '),
      ExpressionAttributeNames: w.names,
      ExpressionAttributeValues: w.values,
    });
  }

  /**
   * Gives back leases that were never handed to anyone (a Lambda consumer's invocation that ran out
   * of time or met an AWS failure first): each entry is free again for the event source's retry of
   * the batch. Only where the lease is still the one written with `lease` (or taken over with it);
   * all or none.
   */
  release(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    indexes: readonly number[],
    lease: NewLease,
  ): Promise<Range | undefined> {
    // This lease's stamp, whether it was written by a lease or by a takeover (which adds its count).
    return this.endLeases(queue, range, indexes, leaseStamp(lease), lease.expiresAt);
  }

  /**
   * Ends the leases whose stamp begins with `stamp` (and, when given, that expire at `expiresAt`)
   * on `indexes` without an attempt: they are free again. The rest of an ordered queue's per-key
   * batch whose earlier message failed goes back with its delivery's stamp (`deliveryStamp`).
   * All or none.
   */
  endLeases(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    indexes: readonly number[],
    stamp: string,
    expiresAt?: number,
  ): Promise<Range | undefined> {
    const names: Record<string, string> = { '#E': 'E', '#O': 'O', '#A': 'A', '#F': 'F' };
    const values: Record<string, unknown> = {
      ':o': stamp,
      ...(expiresAt !== undefined ? { ':e': expiresAt } : {}),
    };
    const same = expiresAt !== undefined ? (k: number) => `#E.#k${k} = :e AND ` : () => '';
    const remove: string[] = [];
    const cond = indexes.map((index, k) => {
      names[`#k${k}`] = String(index);
      values[`:v${k}`] = index;
      remove.push(`#E.#k${k}`, `#O.#k${k}`);
      return `${same(k)}begins_with(#O.#k${k}, :o) AND ${unfinishedCondition(k)}`;
    });
    return this.update(queue, range, {
      UpdateExpression: `REMOVE ${remove.join(', ')}`,
      ConditionExpression: cond.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    });
  }

  /**
   * Acks live leases of one range: all or none. Answers the range as written. `deliveredAt`, by
   * entry: each lease must be that delivery (an ordered queue delivers an entry again in place).
   */
  ack(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    indexes: readonly number[],
    now: number,
    deliveredAt?: ReadonlyMap<number, number>,
  ) {
    return this.finish(queue, range, indexes, 'A', 'live', now, deliveredAt);
  }

  /**
   * An ordered queue's blocked key (parked, or held by a message outside the ranges): its entries
   * here go to its hold area (written before), finished so the commit point passes them, and named
   * in `H` as still to deliver from there. Only entries nobody leased: all or none.
   */
  hold(queue: string, range: Pick<Range, 'shard' | 'start'>, indexes: readonly number[]) {
    const names: Record<string, string> = { '#E': 'E', '#A': 'A', '#F': 'F', '#H': 'H' };
    const values: Record<string, unknown> = { ':set': new Set(indexes), ':w': 'w' };
    const cond = indexes.map((index, k) => {
      names[`#k${k}`] = String(index);
      names[`#r${k}`] = retryAttribute(index);
      values[`:v${k}`] = index;
      return `attribute_not_exists(#E.#k${k}) AND (attribute_not_exists(#r${k}) OR begins_with(#r${k}, :w)) AND ${unfinishedCondition(k)}`;
    });
    return this.update(queue, range, {
      UpdateExpression: 'ADD #F :set, #H :set',
      ConditionExpression: cond.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    });
  }

  /**
   * Acks an entry finished into its key's hold area, once the held message was handled from there
   * (an ordered queue's Lambda consumer): trace then reads it as acked where it was admitted.
   */
  ackHeld(queue: string, range: Pick<Range, 'shard' | 'start'>, index: number, now: number) {
    return this.update(queue, range, {
      UpdateExpression: 'ADD #A :set DELETE #H :set SET #at = :now',
      ConditionExpression: 'contains(#F, :v) AND NOT contains(#A, :v)',
      ExpressionAttributeNames: { '#A': 'A', '#F': 'F', '#H': 'H', '#at': 'at' },
      ExpressionAttributeValues: { ':set': new Set([index]), ':v': index, ':now': now },
    });
  }

  /** A held message's delivery failed (its retry or dead letter is written): not to deliver again. */
  heldFailed(queue: string, range: Pick<Range, 'shard' | 'start'>, index: number) {
    return this.update(queue, range, {
      UpdateExpression: 'DELETE #H :set',
      // Not a range of its own made up when this one is gone (finished, past its lifetime).
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#H': 'H' },
      ExpressionAttributeValues: { ':set': new Set([index]) },
    });
  }

  /** Marks an entry as finished onto the retry path: its lease was live (a nack) or expired (the sweep). */
  fail(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    index: number,
    lease: 'live' | 'expired' | 'any',
    now: number,
  ): Promise<Range | undefined> {
    return this.finish(queue, range, [index], 'F', lease, now);
  }

  /**
   * A failure whose retry waits in the range (core/ranges.ts waitsInRange): ends the lease of the
   * delivery made at `deliveredAt` (live: a nack; expired: the sweep) and marks the entry waiting
   * until `dueAt`; on an ordered queue, to be delivered again in place as `attempt`.
   */
  retry(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    index: number,
    deliveredAt: number,
    dueAt: number,
    now: number,
    how: { lease?: 'live' | 'expired'; attempt?: number } = {},
  ): Promise<Range | undefined> {
    const lease = how.lease === 'expired' ? '#E.#k0 <= :now' : liveCondition(0);
    return this.update(queue, range, {
      UpdateExpression: 'REMOVE #E.#k0, #O.#k0 SET #r0 = :w',
      ConditionExpression: `${lease} AND begins_with(#O.#k0, :o) AND ${unfinishedCondition(0)}`,
      ExpressionAttributeNames: {
        '#E': 'E',
        '#O': 'O',
        '#A': 'A',
        '#F': 'F',
        '#k0': String(index),
        '#r0': retryAttribute(index),
      },
      ExpressionAttributeValues: {
        ':w': waitMark(dueAt, how.attempt),
        ':o': deliveryStamp(deliveredAt),
        ':now': now,
        ':v0': index,
      },
    });
  }

  /**
   * Admission of retry entries: finishes the entries they retry, each marked with its copy's mark.
   * A mark already there is this copy's admission offered again. All or none.
   */
  passOn(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    marks: readonly { index: number; mark: string }[],
  ): Promise<Range | undefined> {
    const names: Record<string, string> = { '#A': 'A', '#F': 'F' };
    const values: Record<string, unknown> = { ':set': new Set(marks.map((m) => m.index)), ':w': 'w' };
    const set: string[] = [];
    const cond = marks.map(({ index, mark }, k) => {
      names[`#r${k}`] = retryAttribute(index);
      values[`:v${k}`] = index;
      values[`:m${k}`] = mark;
      set.push(`#r${k} = :m${k}`);
      return `((begins_with(#r${k}, :w) AND ${unfinishedCondition(k)}) OR #r${k} = :m${k})`;
    });
    return this.update(queue, range, {
      UpdateExpression: `SET ${set.join(', ')} ADD #F :set`,
      ConditionExpression: cond.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    });
  }

  /** The gap cap: a waiting retry moved to the message's item (the delay store) is finished here. */
  moveRetry(queue: string, range: Pick<Range, 'shard' | 'start'>, index: number): Promise<Range | undefined> {
    return this.update(queue, range, {
      UpdateExpression: 'SET #r0 = :x ADD #F :set',
      ConditionExpression: `begins_with(#r0, :w) AND ${unfinishedCondition(0)}`,
      ExpressionAttributeNames: { '#A': 'A', '#F': 'F', '#r0': retryAttribute(index) },
      ExpressionAttributeValues: { ':x': MOVED_MARK, ':w': 'w', ':set': new Set([index]), ':v0': index },
    });
  }

  /**
   * The gap cap: a live lease moved to the message's item is finished here, only while the range
   * holds exactly the lease the item took, so an extend that landed in the range meanwhile is not
   * lost (the move is then undone and tried again with the new expiry).
   */
  moveLease(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    index: number,
    lease: { expiresAt: number; deliveredAt: number },
    now: number,
  ): Promise<Range | undefined> {
    return this.update(queue, range, {
      UpdateExpression: 'ADD #F :set',
      ConditionExpression: `#E.#k0 = :e AND ${liveCondition(0)} AND begins_with(#O.#k0, :o0) AND ${unfinishedCondition(0)}`,
      ExpressionAttributeNames: { '#E': 'E', '#O': 'O', '#A': 'A', '#F': 'F', '#k0': String(index) },
      ExpressionAttributeValues: {
        ':set': new Set([index]),
        ':e': lease.expiresAt,
        ':now': now,
        ':o0': deliveryStamp(lease.deliveredAt),
        ':v0': index,
      },
    });
  }

  /** Moves a live lease (of the delivery made at `deliveredAt`, when given) to a new expiry. */
  extend(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    index: number,
    expiresAt: number,
    now: number,
    deliveredAt?: number,
  ): Promise<Range | undefined> {
    const names: Record<string, string> = { '#E': 'E', '#A': 'A', '#F': 'F', '#k0': String(index) };
    const values: Record<string, unknown> = { ':e': expiresAt, ':now': now, ':v0': index };
    if (deliveredAt !== undefined) {
      names['#O'] = 'O';
      values[':o0'] = deliveryStamp(deliveredAt);
    }
    const same = deliveredAt !== undefined ? ' AND begins_with(#O.#k0, :o0)' : '';
    return this.update(queue, range, {
      UpdateExpression: 'SET #E.#k0 = :e',
      ConditionExpression: `${liveCondition(0)}${same} AND ${unfinishedCondition(0)}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    });
  }

  private finish(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    indexes: readonly number[],
    into: 'A' | 'F',
    lease: 'live' | 'expired' | 'any',
    now: number,
    deliveredAt?: ReadonlyMap<number, number>,
  ): Promise<Range | undefined> {
    const names: Record<string, string> = { '#E': 'E', '#A': 'A', '#F': 'F' };
    const values: Record<string, unknown> = { ':set': new Set(indexes) };
    const cond = indexes.map((index, k) => {
      names[`#k${k}`] = String(index);
      values[`:v${k}`] = index;
      const at = deliveredAt?.get(index);
      if (at !== undefined) {
        names['#O'] = 'O';
        values[`:o${k}`] = deliveryStamp(at);
      }
      const same = at !== undefined ? ` AND begins_with(#O.#k${k}, :o${k})` : '';
      const leaseCond =
        lease === 'live'
          ? liveCondition(k)
          : lease === 'expired'
            ? `#E.#k${k} <= :now`
            : `attribute_exists(#E.#k${k})`;
      return `${leaseCond}${same} AND ${unfinishedCondition(k)}`;
    });
    if (lease !== 'any' || into === 'A') values[':now'] = now;
    // An ack keeps its time (the latest of the range's), for trace.
    if (into === 'A') names['#at'] = 'at';
    return this.update(queue, range, {
      UpdateExpression: into === 'A' ? 'ADD #A :set SET #at = :now' : 'ADD #F :set',
      ConditionExpression: cond.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    });
  }

  private update(
    queue: string,
    range: Pick<Range, 'shard' | 'start'>,
    expression: {
      UpdateExpression: string;
      ConditionExpression: string;
      ExpressionAttributeNames: Record<string, string>;
      ExpressionAttributeValues: Record<string, unknown>;
    },
  ): Promise<Range | undefined> {
    return this.conditional(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: rangesPk(queue, range.shard), sk: seqSortKey(range.start) },
        ...expression,
        ReturnValues: 'ALL_NEW',
      }),
    ).then((out) => (out?.Attributes ? toRange(range.shard, out.Attributes) : undefined));
  }

  /** The command's answer, or undefined when its condition failed. */
  private async conditional(
    command: InstanceType<typeof PutCommand> | InstanceType<typeof UpdateCommand>,
  ): Promise<{ Attributes?: Item } | undefined> {
    try {
      return await this.doc.send<object, { Attributes?: Item }>(command);
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }
}

/** A lease write keeps its consumer's id once per range, under the tag its stamps carry. */
function keepConsumerId(
  lease: NewLease,
  into: { names: Record<string, string>; values: Record<string, unknown>; set: string[] },
): void {
  if (lease.consumerId === undefined) return;
  Object.assign(into.names, { '#C': 'C', '#tag': leaseTag(lease) });
  into.values[':c'] = lease.consumerId;
  into.set.push('#C.#tag = :c');
}

function leaseTag(lease: NewLease): string {
  return lease.consumerId === undefined ? '' : consumerTag(lease.consumerId);
}

/** How every lease stamp of the delivery made at `deliveredAt` begins. */
export function deliveryStamp(deliveredAt: number): string {
  return `${deliveredAt.toString(36)}.`;
}

/** What a lease writes to `O`: its delivery time, its consumer's tag, and its takeovers if any. */
function leaseStamp(lease: NewLease & { takeovers?: number }): string {
  const stamp = `${deliveryStamp(lease.deliveredAt)}${leaseTag(lease)}`;
  return lease.takeovers ? `${stamp}.${lease.takeovers}` : stamp;
}

function liveCondition(k: number): string {
  return `#E.#k${k} > :now`;
}

function unfinishedCondition(k: number): string {
  return `NOT contains(#A, :v${k}) AND NOT contains(#F, :v${k})`;
}

function retryAttribute(index: number): string {
  return `R${index}`;
}

/** A waiting entry's mark: when it is due and, retried in place, as which attempt. */
function waitMark(dueAt: number, attempt?: number): string {
  return `w${dueAt.toString(36)}${attempt !== undefined ? `.${attempt}` : ''}`;
}

/** Waiting retries, in-place attempts and pass-on marks, from an item's `R<entry>` attributes. */
function retriesOf(item: Item, finished: (index: number) => boolean) {
  const retrying = new Map<number, Retrying>();
  const passedOn = new Map<number, string>();
  const attempts = new Map<number, number>();
  for (const [name, value] of Object.entries(item)) {
    if (!/^R\d+$/.test(name) || typeof value !== 'string') continue;
    const index = Number(name.slice(1));
    if (value.startsWith('w')) {
      const [due = '', attempt] = value.slice(1).split('.');
      if (!finished(index))
        retrying.set(index, {
          dueAt: Number.parseInt(due, 36),
          ...(attempt !== undefined ? { attempt: Number(attempt) } : {}),
        });
    } else if (value.startsWith('a')) attempts.set(index, Number(value.slice(1)));
    else if (value !== MOVED_MARK) passedOn.set(index, value);
  }
  return { retrying, passedOn, attempts };
}

/** An ordered queue's key tags, one per entry. */
function keysOf(item: Item): string[] | undefined {
  if (typeof item.K !== 'string') return undefined;
  const keys: string[] = [];
  for (let at = 0; at < item.K.length; at += KEY_TAG_CHARS) keys.push(item.K.slice(at, at + KEY_TAG_CHARS));
  return keys;
}

/** How a new range's entries start: finished, waiting until a time, or leased. */
export interface NewEntries {
  finished?: readonly number[];
  waiting?: ReadonlyMap<number, number>;
  leases?: ReadonlyMap<number, NewLease>;
}

/** A range as `create` would write it: what admission decides from before its write. */
export function rangeAsCreated(range: NewRange, entries: NewEntries = {}): Range {
  return toRange(range.shard, newRangeItem('', range, 0, entries));
}

function newRangeItem(queue: string, range: NewRange, ttl: number, entries: NewEntries): Item {
  const {
    finished = [],
    waiting = new Map<number, number>(),
    leases = new Map<number, NewLease>(),
  } = entries;
  const E: Record<string, number> = {};
  const O: Record<string, string> = {};
  const C: Record<string, string> = {};
  for (const [index, lease] of leases) {
    E[index] = lease.expiresAt;
    O[index] = leaseStamp(lease);
    if (lease.consumerId !== undefined) C[leaseTag(lease)] = lease.consumerId;
  }
  return {
    pk: rangesPk(queue, range.shard),
    sk: seqSortKey(range.start),
    l: range.last,
    n: range.count,
    b: range.base,
    t: range.enqueuedAt,
    sg: range.segment.id,
    so: range.segment.offset,
    ss: range.segment.store,
    E,
    O,
    C,
    ...(finished.length ? { F: new Set(finished) } : {}),
    ...Object.fromEntries([...waiting].map(([index, dueAt]) => [retryAttribute(index), waitMark(dueAt)])),
    ...(range.keys ? { K: range.keys.join('') } : {}),
    [TTL_ATTRIBUTE]: ttl,
  };
}

function toRange(shard: string, item: Item): Range {
  const leases = new Map<number, Lease>();
  const consumers = (item.C ?? {}) as Record<string, string>;
  const delivered = (item.O ?? {}) as Record<string, string>;
  for (const [index, expiresAt] of Object.entries((item.E ?? {}) as Record<string, number>)) {
    const [at = '0', tag = '', takeovers] = (delivered[index] ?? '').split('.');
    const consumerId = consumers[tag];
    leases.set(Number(index), {
      expiresAt: Number(expiresAt),
      deliveredAt: Number.parseInt(at, 36),
      ...(consumerId !== undefined ? { consumerId } : {}),
      ...(takeovers !== undefined ? { takeovers: Number(takeovers) } : {}),
    });
  }
  const numbers = (v: unknown) => new Set([...((v as Set<number> | undefined) ?? [])].map(Number));
  const acked = numbers(item.A);
  const failed = numbers(item.F);
  const held = numbers(item.H);
  const { retrying, passedOn, attempts } = retriesOf(item, (index) => acked.has(index) || failed.has(index));
  const keys = keysOf(item);
  return {
    shard,
    start: String(item.sk).replace(/^0+(?=.)/, ''),
    last: String(item.l),
    count: Number(item.n),
    base: Number(item.b),
    enqueuedAt: Number(item.t),
    segment: { id: String(item.sg), offset: Number(item.so), store: item.ss === 's3' ? 's3' : 'ddb' },
    leases,
    acked,
    ...(typeof item.at === 'number' ? { ackedAt: item.at } : {}),
    failed,
    held,
    retrying,
    passedOn,
    attempts,
    ...(keys ? { keys } : {}),
  };
}
