import {
  BatchGetCommand,
  DeleteCommand,
  type DocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '../aws/dynamodb.js';
import { type Envelope, payloadBytes } from '../core/envelope.js';
import type { FailureReason } from '../core/retry-policy.js';
import { buildKeyCondition, buildUpdate, Raw, type UpdateSpec } from './expression.js';
import { BODY_SK, GSI1, gsi, historySk, messagePk, STATE_SK, TTL_ATTRIBUTE, timeSortKey } from './keys.js';
import { countAll, isConditionFailed, retryUnprocessed } from './util.js';

/**
 * A message's mutable state (one small item), its immutable body and its history, each a
 * single-item conditional write (no transactions): a retry or the sweeper can finish any
 * sequence, and a lease or ack never rewrites payload bytes.
 */

/**
 * `ranged`: the message's current entry is in the lease layer (store/ranges.ts), which holds its
 * lease and ack; the item only remembers where (shard, seq), for its history, trace and retries.
 */
export type MessageState = 'leased' | 'delayed' | 'dead' | 'acked' | 'purged' | 'ranged';

export interface StateItem {
  pk: string;
  sk: string;
  queue: string;
  message_id: string;
  key?: string;
  shard: string;
  seq: string;
  entry: number;
  state: MessageState;
  attempt: number;
  gen: number;
  produced_at: number;
  enqueued_at: number;
  delivered_at?: number;
  lease_expires_at?: number;
  consumer_id?: string;
  due_at?: number;
  dead_at?: number;
  /** DynamoDB's TTL (epoch s): a dead letter's expiry (core/retention.ts deadLetterExpiry). */
  ttl?: number;
  dead_reason?: FailureReason;
  /** The body inline when it is small; otherwise a `B` item holds it. */
  body?: string;
  /** Payload bytes, for the queue's storage quota. */
  bytes?: number;
  /**
   * Lease layer: a retry waiting in the delay store reads its body from a segment (its first
   * entry's), which outlives the wait: no body is copied for it.
   */
  src?: SegmentSource;
  /**
   * Lease layer: the failed attempts, in the item itself: written by the same conditional write
   * that moves the message to the delay store or the DLQ, so an attempt is recorded exactly when
   * its failure lands, and costs no write of its own.
   */
  hist?: HistoryRecord[];
}

export interface SegmentSource {
  shard: string;
  id: string;
  store: 'ddb' | 's3';
  /** The entry's index in the segment. */
  index: number;
}

/** What is stored once per message: the envelope less what changes per log entry. */
export type StoredBody = Pick<
  Envelope,
  | 'message_id'
  | 'queue'
  | 'key'
  | 'headers'
  | 'attributes'
  | 'schema_ref'
  | 'traceparent'
  | 'replay'
  | 'produced_at'
  | 'payload'
  | 'claim'
>;

export interface HistoryRecord {
  generation: number;
  attempt: number;
  consumer_id?: string;
  reason: FailureReason;
  error?: string;
  delivered_at: number;
  failed_at: number;
}

/**
 * An item of this life that the entry at `:shard`/`:seq` (number `:entry`) may move: one `ranged`
 * there, or at an earlier entry (its retries since waited in their ranges, which write no item).
 */
const RANGED_HERE_OR_BEFORE =
  '(#state = :ranged AND ((#shard = :shard AND #seq = :seq) OR (#entry < :entry AND #produced_at = :produced_at)))';

/** Bodies up to this size ride in the state item, which then stays under 1 KB. */
const INLINE_BODY_BYTES = 512;

/**
 * A moved lease's delivery: its entry and its delivery time (an ordered queue delivers an entry
 * again in place, so the entry alone does not name one delivery).
 */
const THIS_DELIVERY = '#gen = :gen AND #delivered_at = :d';

export class MessageStore {
  constructor(
    private readonly doc: DocumentClient,
    readonly table: string,
  ) {}

  /**
   * A log entry not yet due (produce's `delay_seconds`) into the delay store, whence the sweep
   * puts it back into the log as its next entry. The condition on `entry` takes each entry once,
   * however often it is in the log.
   */
  async delay(shard: string, seq: string, env: Envelope, bodyTtl: number): Promise<boolean> {
    const pk = messagePk(env.queue, env.message_id);
    const inlineBody = env.entry === 1 ? await this.putBody(env, bodyTtl) : inlineBodyOf(env);
    const dueAt = env.deliver_after ? Date.parse(env.deliver_after) : 0;
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk, sk: STATE_SK },
          ...buildUpdate({
            set: {
              queue: env.queue,
              message_id: env.message_id,
              key: env.key,
              shard,
              seq,
              entry: env.entry,
              state: 'delayed',
              attempt: env.attempt,
              gen: new Raw('if_not_exists(#gen, :zero)', { ':zero': 0 }),
              produced_at: Date.parse(env.produced_at),
              enqueued_at: Date.parse(env.enqueued_at),
              body: inlineBody,
              bytes: payloadBytes(env),
              due_at: dueAt,
              gsi1pk: gsi.delayed(env.queue, shard),
              gsi1sk: timeSortKey(dueAt, env.message_id),
            },
            remove: [
              'consumer_id',
              'delivered_at',
              'lease_expires_at',
              'dead_at',
              'dead_reason',
              TTL_ATTRIBUTE,
            ],
            // `dead`: a redriven message re-enters as its next entry.
            condition: 'attribute_not_exists(#pk) OR (#state IN (:delayed, :dead) AND #entry < :entry)',
            values: { ':delayed': 'delayed', ':dead': 'dead', ':entry': env.entry },
          }),
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  /**
   * The body first (a state item must never point at a body that is not there), as its own item
   * when it is too big to ride in the state item. Answers the inline body, if it is one.
   */
  private async putBody(env: Envelope, bodyTtl: number): Promise<string | undefined> {
    const inline = inlineBodyOf(env);
    if (inline !== undefined) return inline;
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          pk: messagePk(env.queue, env.message_id),
          sk: BODY_SK,
          body: JSON.stringify(storedBody(env)),
          [TTL_ATTRIBUTE]: bodyTtl,
        },
      }),
    );
    return undefined;
  }

  /**
   * A retry's (or a redrive's) next entry enters a range: the item moves to `ranged` at that
   * position, once; the same position again (a retried admission) is still this entry's.
   */
  async enterRange(shard: string, seq: string, env: Envelope): Promise<boolean> {
    const moved = await this.updateState(env.queue, env.message_id, {
      set: {
        state: 'ranged',
        shard,
        seq,
        entry: env.entry,
        attempt: env.attempt,
        enqueued_at: Date.parse(env.enqueued_at),
      },
      remove: [
        'gsi1pk',
        'gsi1sk',
        'due_at',
        'consumer_id',
        'delivered_at',
        'lease_expires_at',
        TTL_ATTRIBUTE,
      ],
      condition:
        '(#state IN (:delayed, :dead) AND #entry < :entry) OR (#state = :ranged AND #shard = :shard AND #seq = :seq)',
      values: {
        ':delayed': 'delayed',
        ':dead': 'dead',
        ':ranged': 'ranged',
        ':entry': env.entry,
        ':shard': shard,
        ':seq': seq,
      },
    });
    return moved !== undefined;
  }

  /**
   * A failed attempt of an entry of the lease layer: the message gets (or moves) its item into
   * the delay store or the DLQ. Once per entry: the position names the delivery. An entry whose
   * lease was moved out of its range (evictLease) fails from that item, on its lease's expiry.
   */
  async failFromRange(
    at: { shard: string; seq: string },
    env: Envelope,
    outcome: { kind: 'retry'; nextAttempt: number; dueAt: number } | { kind: 'dead'; reason: FailureReason },
    now: number,
    ttls: { bodyTtl: number; deadTtl: number },
    options: { source?: SegmentSource; attempt?: HistoryRecord; evicted?: 'live' | 'expired' },
  ): Promise<StateItem | undefined> {
    // A dead letter outlives the log and its segments: it keeps a body of its own; so does a
    // message with no segment entry to point at (one from a key's hold area).
    const inlineBody =
      outcome.kind === 'dead' || !options.source ? await this.putBody(env, ttls.bodyTtl) : undefined;
    const { shard, seq } = at;
    return this.updateState(env.queue, env.message_id, {
      set: {
        hist: options.attempt
          ? new Raw('list_append(if_not_exists(#hist, :none), :attempt)', {
              ':none': [],
              ':attempt': [options.attempt],
            })
          : undefined,
        ...this.entryFields(at, env),
        body: inlineBody,
        ...(outcome.kind === 'retry'
          ? {
              state: 'delayed',
              src: options.source,
              attempt: outcome.nextAttempt,
              due_at: outcome.dueAt,
              gsi1pk: gsi.delayed(env.queue, shard),
              gsi1sk: timeSortKey(outcome.dueAt, env.message_id),
            }
          : {
              state: 'dead',
              attempt: env.attempt,
              dead_at: now,
              dead_reason: outcome.reason,
              gsi1pk: gsi.dead(env.queue),
              gsi1sk: timeSortKey(now, env.message_id),
              [TTL_ATTRIBUTE]: ttls.deadTtl,
            }),
      },
      remove: [
        ...(outcome.kind === 'dead' ? ['src'] : []),
        ...(options.evicted ? ['consumer_id', 'delivered_at', 'lease_expires_at'] : []),
      ],
      // An item of an earlier life of the id (a producer's id sent again after its dedup window) is
      // replaced; otherwise only this entry's own `ranged` item moves, or its evicted lease.
      condition: options.evicted
        ? `#state = :leased AND #shard = :shard AND #seq = :seq AND #lease_expires_at ${options.evicted === 'live' ? '>' : '<='} :now`
        : `attribute_not_exists(#pk) OR #produced_at < :produced_at OR ${RANGED_HERE_OR_BEFORE}`,
      values: options.evicted
        ? { ':leased': 'leased', ':shard': shard, ':seq': seq, ':now': now }
        : {
            ':ranged': 'ranged',
            ':shard': shard,
            ':seq': seq,
            ':entry': env.entry,
            ':produced_at': Date.parse(env.produced_at),
          },
    });
  }

  /**
   * The gap cap: a live lease far below its shard's head moves out of its range into the
   * message's own item (leased, in the index by expiry), so the range can finish and the commit
   * point move on while the holder keeps its lease: its receipt then acks, extends or nacks there.
   */
  async evictLease(
    at: { shard: string; seq: string },
    env: Envelope,
    lease: { expiresAt: number; deliveredAt: number; consumerId?: string },
    source: SegmentSource,
  ): Promise<StateItem | undefined> {
    return this.updateState(env.queue, env.message_id, {
      set: {
        ...this.entryFields(at, env),
        state: 'leased',
        attempt: env.attempt,
        src: source,
        delivered_at: lease.deliveredAt,
        lease_expires_at: lease.expiresAt,
        consumer_id: lease.consumerId,
        gsi1pk: gsi.leased(env.queue, at.shard),
        gsi1sk: timeSortKey(lease.expiresAt, env.message_id),
      },
      condition: `attribute_not_exists(#pk) OR #produced_at < :produced_at OR ${RANGED_HERE_OR_BEFORE}`,
      values: {
        ':ranged': 'ranged',
        ':shard': at.shard,
        ':seq': at.seq,
        ':entry': env.entry,
        ':produced_at': Date.parse(env.produced_at),
      },
    });
  }

  /** What an item of the lease layer says of its entry. */
  private entryFields(at: { shard: string; seq: string }, env: Envelope) {
    return {
      queue: env.queue,
      message_id: env.message_id,
      key: env.key,
      shard: at.shard,
      seq: at.seq,
      entry: env.entry,
      gen: env.entry,
      produced_at: Date.parse(env.produced_at),
      enqueued_at: Date.parse(env.enqueued_at),
      bytes: payloadBytes(env),
    };
  }

  /**
   * Takes back a failFromRange whose entry turned out acked: the item goes back to `ranged`, less
   * the attempt that write recorded (the last one, when it recorded one).
   */
  async undoFailFromRange(item: StateItem, tombstoneTtl: number, recorded: boolean): Promise<void> {
    const last = (item.hist?.length ?? 0) - 1;
    await this.updateState(item.queue, item.message_id, {
      set: { state: 'ranged', [TTL_ATTRIBUTE]: tombstoneTtl },
      remove: [
        'gsi1pk',
        'gsi1sk',
        'due_at',
        'dead_at',
        'dead_reason',
        ...(recorded && last >= 0 ? [`hist[${last}]`] : []),
      ],
      condition: '#state = :state AND #shard = :shard AND #seq = :seq',
      values: { ':state': item.state, ':shard': item.shard, ':seq': item.seq },
    });
  }

  /** State items in one partition of the index, oldest first; `below` or `above` bounds the sort key. */
  async partition(
    indexPk: string,
    options: { limit: number; below?: string; above?: string },
  ): Promise<StateItem[]> {
    const range = options.below ? ' AND #gsi1sk < :bound' : options.above ? ' AND #gsi1sk > :bound' : '';
    const bound = options.below ?? options.above;
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: GSI1,
        ...buildKeyCondition(`#gsi1pk = :pk${range}`, {
          ':pk': indexPk,
          ...(bound ? { ':bound': bound } : {}),
        }),
        Limit: options.limit,
      }),
    );
    return (out.Items ?? []) as StateItem[];
  }

  /** Every item of a partition of the index, page by page, in its order. */
  async *partitionAll(indexPk: string): AsyncGenerator<StateItem> {
    const PAGE = 100;
    let above: string | undefined;
    for (;;) {
      const page = await this.partition(indexPk, { limit: PAGE, ...(above ? { above } : {}) });
      for (const item of page) {
        yield item;
        above = (item as StateItem & { gsi1sk: string }).gsi1sk;
      }
      if (page.length < PAGE) return;
    }
  }

  /** One page of a partition of the index, for listings with a cursor. */
  async page(
    indexPk: string,
    limit: number,
    startKey: Record<string, unknown> | undefined,
  ): Promise<{ items: StateItem[]; last: Record<string, unknown> | undefined }> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: GSI1,
        ...buildKeyCondition('#gsi1pk = :pk', { ':pk': indexPk }),
        Limit: limit,
        ExclusiveStartKey: startKey,
      }),
    );
    return { items: (out.Items ?? []) as StateItem[], last: out.LastEvaluatedKey };
  }

  /** Counts a partition of the index (paging through it). */
  async count(indexPk: string): Promise<number> {
    return this.countIndex('#gsi1pk = :pk', { ':pk': indexPk });
  }

  /** Counts what a key condition on the index matches, paging through it. */
  private async countIndex(condition: string, values: Record<string, unknown>): Promise<number> {
    return countAll(this.doc, {
      TableName: this.table,
      IndexName: GSI1,
      ...buildKeyCondition(condition, values),
    });
  }

  async get(queue: string, messageId: string): Promise<StateItem | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: messagePk(queue, messageId), sk: STATE_SK },
        ConsistentRead: true,
      }),
    );
    return out.Item as StateItem | undefined;
  }

  /**
   * Acks the delivery `generation` while its lease is live. An ack repeated with the same
   * receipt is `already_acked`; any other receipt is `stale`.
   */
  async ack(
    queue: string,
    messageId: string,
    delivery: { generation: number; deliveredAt: number },
    now: number,
    tombstoneTtl: number,
  ): Promise<{ outcome: 'acked' | 'already_acked' | 'stale'; key?: string; bytes?: number }> {
    const { generation, deliveredAt } = delivery;
    const acked = await this.updateState(queue, messageId, {
      set: { state: 'acked', acked_at: now, [TTL_ATTRIBUTE]: tombstoneTtl },
      remove: ['gsi1pk', 'gsi1sk', 'body'],
      condition: `#state = :leased AND ${THIS_DELIVERY} AND #lease_expires_at > :now`,
      values: { ':leased': 'leased', ':gen': generation, ':d': deliveredAt, ':now': now },
    });
    if (acked) {
      return {
        outcome: 'acked',
        bytes: acked.bytes ?? 0,
        ...(acked.key !== undefined ? { key: acked.key } : {}),
      };
    }
    const item = await this.get(queue, messageId);
    const same = item?.gen === generation && item.delivered_at === deliveredAt;
    return { outcome: item?.state === 'acked' && same ? 'already_acked' : 'stale' };
  }

  /** Moves the live lease of `delivery` to a new expiry. False when the receipt is stale. */
  async extend(
    queue: string,
    messageId: string,
    delivery: { generation: number; deliveredAt: number },
    expiresAt: number,
    now: number,
  ): Promise<boolean> {
    const moved = await this.updateState(queue, messageId, {
      set: { lease_expires_at: expiresAt, gsi1sk: timeSortKey(expiresAt, messageId) },
      condition: `#state = :leased AND ${THIS_DELIVERY} AND #lease_expires_at > :now`,
      values: { ':leased': 'leased', ':gen': delivery.generation, ':d': delivery.deliveredAt, ':now': now },
    });
    return moved !== undefined;
  }

  /**
   * After entry `entry + 1` was appended to the log: the item moves from the delay store (or DLQ)
   * straight to `ranged` at the position the new entry landed at, so admission only has to read it
   * to know that copy is the entry (no write), and a second copy of the entry in the log is passed
   * over.
   */
  async markRanged(
    item: Pick<StateItem, 'queue' | 'message_id' | 'entry'>,
    from: 'delayed' | 'dead',
    landed: { shard: string; seq: string; attempt: number; enqueuedAt: number },
  ): Promise<void> {
    await this.updateState(item.queue, item.message_id, {
      set: {
        state: 'ranged',
        entry: item.entry + 1,
        shard: landed.shard,
        seq: landed.seq,
        attempt: landed.attempt,
        enqueued_at: landed.enqueuedAt,
      },
      remove: ['gsi1pk', 'gsi1sk', 'due_at', TTL_ATTRIBUTE],
      condition: '#state = :from AND #entry = :entry',
      values: { ':from': from, ':entry': item.entry },
    });
  }

  /** State items by id; `consistent` where a decision rests on what is missing. */
  async getMany(
    queue: string,
    messageIds: readonly string[],
    consistent = false,
  ): Promise<Map<string, StateItem>> {
    const out = new Map<string, StateItem>();
    const unique = [...new Set(messageIds)];
    for (let i = 0; i < unique.length; i += 100) {
      const keys = unique.slice(i, i + 100).map((id) => ({ pk: messagePk(queue, id), sk: STATE_SK }));
      await retryUnprocessed(keys, async (pending) => {
        const res = await this.doc.send(
          new BatchGetCommand({
            RequestItems: { [this.table]: { Keys: pending, ConsistentRead: consistent } },
          }),
        );
        for (const row of res.Responses?.[this.table] ?? [])
          out.set(String(row.message_id), row as StateItem);
        return (res.UnprocessedKeys?.[this.table]?.Keys ?? []) as typeof pending;
      });
    }
    return out;
  }

  /** Removes a dead letter for good; the tombstone remembers it until its TTL. */
  async purge(item: StateItem, now: number, ttl: number): Promise<boolean> {
    return this.transition(item, 'dead', { state: 'purged', purged_at: now, [TTL_ATTRIBUTE]: ttl }, [
      'gsi1pk',
      'gsi1sk',
    ]);
  }

  private async transition(
    item: Pick<StateItem, 'queue' | 'message_id' | 'entry'>,
    from: MessageState,
    set: Record<string, unknown>,
    remove: string[] = [],
  ): Promise<boolean> {
    const moved = await this.updateState(item.queue, item.message_id, {
      set,
      remove,
      condition: '#state = :from AND #entry = :entry',
      values: { ':from': from, ':entry': item.entry },
    });
    return moved !== undefined;
  }

  /** One conditional write on a state item: the item as written, or undefined when the condition failed. */
  private async updateState(
    queue: string,
    messageId: string,
    spec: UpdateSpec,
  ): Promise<StateItem | undefined> {
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: messagePk(queue, messageId), sk: STATE_SK },
          ...buildUpdate(spec),
          ReturnValues: 'ALL_NEW',
        }),
      );
      return out.Attributes as StateItem;
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  /** Bodies of state items, from the item itself or its `B` item (not those whose body is in a segment). */
  async bodies(items: readonly StateItem[]): Promise<Map<string, StoredBody>> {
    const out = new Map<string, StoredBody>();
    const missing: StateItem[] = [];
    for (const item of items) {
      if (item.body) out.set(item.pk, JSON.parse(item.body) as StoredBody);
      else if (!item.src) missing.push(item);
    }
    for (let i = 0; i < missing.length; i += 100) {
      const keys = missing.slice(i, i + 100).map((m) => ({ pk: m.pk, sk: BODY_SK }));
      await retryUnprocessed(keys, async (pending) => {
        const res = await this.doc.send(
          new BatchGetCommand({ RequestItems: { [this.table]: { Keys: pending } } }),
        );
        for (const row of res.Responses?.[this.table] ?? [])
          out.set(String(row.pk), JSON.parse(String(row.body)));
        return (res.UnprocessedKeys?.[this.table]?.Keys ?? []) as typeof pending;
      });
    }
    return out;
  }

  /**
   * A failed attempt as an item of its own (`H#<entry>`): a retry that waits in its range has no
   * state item to hold it. Lives as long as a dead letter would, so a DLQ entry has every attempt.
   */
  async putHistory(queue: string, messageId: string, record: HistoryRecord, ttl: number): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          pk: messagePk(queue, messageId),
          sk: historySk(record.generation),
          ...record,
          [TTL_ATTRIBUTE]: ttl,
        },
      }),
    );
  }

  /** Takes back putHistory's record when its failure did not land. */
  async deleteHistory(queue: string, messageId: string, generation: number): Promise<void> {
    await this.doc.send(
      new DeleteCommand({
        TableName: this.table,
        Key: { pk: messagePk(queue, messageId), sk: historySk(generation) },
      }),
    );
  }

  /** An operator's action on the message, kept for its trace. */
  async putEvent(
    queue: string,
    messageId: string,
    event: { event: string; detail?: Record<string, unknown> },
    now: number,
    ttl: number,
  ): Promise<void> {
    const at = new Date(now).toISOString();
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          pk: messagePk(queue, messageId),
          sk: `E#${at}#${event.event}`,
          at,
          ...event,
          [TTL_ATTRIBUTE]: ttl,
        },
      }),
    );
  }

  /** Every item of a message (state, body, history, events): its whole story in one query. */
  async story(queue: string, messageId: string): Promise<Record<string, unknown>[]> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        ...buildKeyCondition('#pk = :pk', { ':pk': messagePk(queue, messageId) }),
        ConsistentRead: true,
      }),
    );
    return out.Items ?? [];
  }

  /** History of a message, oldest first. */
  /**
   * A dead letter kept until `ttl` (epoch s): every item of its message whose TTL ends sooner gets
   * it, the state item last, on the condition that it is still this dead letter: its write is the
   * one that counts, so a pass that stops before it extends the rest again and then it. Answers
   * whether the state item was extended by this call.
   */
  async extendDead(queue: string, item: StateItem, ttl: number): Promise<boolean> {
    const pk = messagePk(queue, item.message_id);
    const out = await this.doc.send(
      new QueryCommand({ TableName: this.table, ...buildKeyCondition('#pk = :pk', { ':pk': pk }) }),
    );
    const sooner = (out.Items ?? []).filter(
      (i) => i.sk !== STATE_SK && typeof i[TTL_ATTRIBUTE] === 'number' && i[TTL_ATTRIBUTE] < ttl,
    );
    for (const other of sooner) await this.extendItem(pk, String(other.sk), ttl);
    return this.extendItem(pk, STATE_SK, ttl, ' AND #state = :dead AND #gen = :gen', {
      ':dead': 'dead',
      ':gen': item.gen,
    });
  }

  /** `ttl` on one item whose TTL ends sooner (and which meets `extra`, a condition); whether it was set. */
  private async extendItem(pk: string, sk: string, ttl: number, extra = '', values = {}): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk, sk },
          ...buildUpdate({
            set: { [TTL_ATTRIBUTE]: ttl },
            condition: `#${TTL_ATTRIBUTE} < :ttl${extra}`,
            values: { ':ttl': ttl, ...values },
          }),
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  async history(queue: string, messageId: string, state?: StateItem): Promise<HistoryRecord[]> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        ...buildKeyCondition('#pk = :pk AND begins_with(#sk, :h)', {
          ':pk': messagePk(queue, messageId),
          ':h': 'H#',
        }),
        ConsistentRead: true,
      }),
    );
    return mergeHistory(
      out.Items as HistoryRecord[] | undefined,
      state ?? (await this.get(queue, messageId)),
    );
  }
}

/** A message's failed attempts, oldest first: its `H#` items and those its state item holds. */
export function mergeHistory(
  items: readonly HistoryRecord[] | undefined,
  state: StateItem | undefined,
): HistoryRecord[] {
  // One record a delivery: a nack whose range write never landed (a crash) leaves its item, and the
  // sweep then records the same delivery's expiry; the nack's, with its error, is the one kept.
  const byDelivery = new Map<number, HistoryRecord>();
  for (const h of [...(items ?? []), ...(state?.hist ?? [])])
    if (!byDelivery.has(h.generation)) byDelivery.set(h.generation, h);
  return [...byDelivery.values()].sort((a, b) => a.generation - b.generation);
}

function inlineBodyOf(env: Envelope): string | undefined {
  const json = JSON.stringify(storedBody(env));
  return Buffer.byteLength(json) <= INLINE_BODY_BYTES ? json : undefined;
}

export function storedBody(env: Envelope): StoredBody {
  return {
    message_id: env.message_id,
    queue: env.queue,
    ...(env.key !== undefined ? { key: env.key } : {}),
    ...(env.headers ? { headers: env.headers } : {}),
    ...(env.attributes ? { attributes: env.attributes } : {}),
    ...(env.schema_ref !== undefined ? { schema_ref: env.schema_ref } : {}),
    ...(env.traceparent !== undefined ? { traceparent: env.traceparent } : {}),
    // A replay's copy stays one through its retries, the DLQ and a redrive (deliveries show `replay_id`).
    ...(env.replay !== undefined ? { replay: env.replay } : {}),
    produced_at: env.produced_at,
    ...(env.claim ? { claim: env.claim } : { payload: env.payload }),
  };
}
