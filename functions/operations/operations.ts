import * as z from 'zod/mini';
import type { ClaimStore } from '../claims/claims.js';
import type { KeyOrder } from '../consume/key-order.js';
import { mapLimit } from '../core/async.js';
import { commitStall, sameMarks } from '../core/commit-stall.js';
import { namespaceParts, type QueueConfig, storageQuotaBytes, streamName } from '../core/config.js';
import { drainView } from '../core/drain.js';
import { deliveryContext } from '../core/envelope.js';
import '../core/zod-mini.js';
import { InvalidRequestError, MessageNotFoundError, NotFoundError } from '../core/errors.js';
import { entryStatus, isFinished, type Range } from '../core/ranges.js';
import { deadLetterExpiry, deadLetterLive, retentionTtls } from '../core/retention.js';
import type { ShardDirectory } from '../log/stream.js';
import type { AuditEntry, AuditTrail } from '../store/audit.js';
import type { CommitMarks } from '../store/commit-marks.js';
import type { Counters } from '../store/counters.js';
import type { KeyStates } from '../store/key-states.js';
import { gsi } from '../store/keys.js';
import type { MessageStore, StateItem } from '../store/messages.js';
import type { Pause, QueueControls } from '../store/queue-controls.js';
import type { RangeStore } from '../store/ranges.js';
import type { StorageMeter } from '../store/storage.js';
import type { TotalsSamples } from '../store/totals-samples.js';
import { type AttemptView, attemptView, iso } from './views.js';

/**
 * The owner's tools for a queue: dead letters (list, get, purge), parked keys (list, skip),
 * the audit trail and stats (docs/contract.md, "Dead letters and operations"). `queue` is a queue's name
 * or a Lambda consumer's namespace (consumerNamespace), whose state is kept the same way.
 */

export interface OperationsDeps {
  tenant: string;
  messages: MessageStore;
  counters: Counters;
  claims: ClaimStore;
  shards: ShardDirectory;
  keys: KeyStates;
  keyOrder: KeyOrder;
  audit: AuditTrail;
  storage: StorageMeter;
  ranges: RangeStore;
  controls: QueueControls;
  samples: TotalsSamples;
  commitMarks: CommitMarks;
  now?: () => number;
}

/** Ranges a stats answer reads per shard: a full default window is 500. */
const STATS_RANGES = 1000;

export interface ParkedKey {
  key: string;
  parked_at: string;
  dead_message_id: string;
  held: number;
}

export interface DeadLetter {
  message_id: string;
  key: string | null;
  payload: unknown;
  headers: Record<string, string>;
  enqueued_at: string;
  dead_at: string;
  attempts: AttemptView[];
  schema_ref?: string;
  traceparent?: string;
  replay_id?: string;
}

const cursorSchema = z.strictObject({
  pk: z.string(),
  sk: z.string(),
  gsi1pk: z.string(),
  gsi1sk: z.string(),
});

const ageSeconds = (now: number, ms: number | undefined) =>
  ms === undefined ? 0 : Math.max(0, (now - ms) / 1000);

export class Operations {
  constructor(private readonly deps: OperationsDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  async dlqList(
    queue: string,
    config: QueueConfig,
    limit: number,
    cursor: string | undefined,
  ): Promise<{ messages: DeadLetter[]; next_cursor: string | null }> {
    const page = await this.deps.messages.page(gsi.dead(queue), limit, decodeCursor(cursor, gsi.dead(queue)));
    const live = page.items.filter((item) => deadLetterLive(item.dead_at, config, this.now()));
    return {
      messages: await this.deadLetters(queue, live),
      next_cursor: page.last ? Buffer.from(JSON.stringify(page.last)).toString('base64url') : null,
    };
  }

  async dlqGet(queue: string, config: QueueConfig, messageId: string): Promise<DeadLetter> {
    const item = await this.deps.messages.get(queue, messageId);
    if (item?.state !== 'dead' || !deadLetterLive(item.dead_at, config, this.now()))
      throw new MessageNotFoundError(messageId);
    return (await this.deadLetters(queue, [item]))[0] as DeadLetter;
  }

  /** Removes a dead letter for good; the deletion is in the audit trail and the message's trace. */
  async dlqPurge(queue: string, config: QueueConfig, messageId: string, actor: string): Promise<void> {
    const item = await this.deps.messages.get(queue, messageId);
    const now = this.now();
    if (item?.state !== 'dead' || !deadLetterLive(item.dead_at, config, this.now()))
      throw new MessageNotFoundError(messageId);
    const ttls = retentionTtls(config, now);
    if (!(await this.deps.messages.purge(item, now, ttls.deadTtl))) throw new MessageNotFoundError(messageId);
    await Promise.all([
      this.deps.storage.release(queue, item.bytes ?? 0, 0),
      this.deps.storage.leftDlq(queue, item.bytes ?? 0, deadLetterExpiry(item.dead_at ?? now, config)),
      this.deps.messages.putEvent(
        queue,
        messageId,
        { event: 'purged', detail: { by: actor } },
        now,
        ttls.deadTtl,
      ),
      this.deps.audit.record(queue, { action: 'purge', actor, target: messageId }, now),
    ]);
  }

  async parkedKeys(queue: string): Promise<ParkedKey[]> {
    const parked = await this.deps.keyOrder.parkedKeys(queue);
    return mapLimit(parked, 8, async (k) => ({
      key: k.key,
      parked_at: iso(k.parked_at),
      dead_message_id: k.dead_message_id ?? '',
      held: await this.deps.keyOrder.heldCount(queue, k),
    }));
  }

  /** Releases a parked key without its dead message, which stays in the DLQ. */
  async skipKey(
    queue: string,
    key: string,
    reason: string,
    actor: string,
  ): Promise<{ key: string; released: number }> {
    const state = (await this.deps.keys.getMany(queue, [key])).get(key);
    if (state?.parked_at === undefined)
      throw new NotFoundError(`the key ${JSON.stringify(key)} is not parked`);
    const released = await this.deps.keyOrder.unpark(queue, state);
    await this.deps.audit.record(
      queue,
      {
        action: 'skip',
        actor,
        target: key,
        reason,
        detail: { dead_message_id: state.dead_message_id, released },
      },
      this.now(),
    );
    return { key, released };
  }

  auditTrail(queue: string, limit: number): Promise<AuditEntry[]> {
    return this.deps.audit.list(queue, limit);
  }

  private async deadLetters(queue: string, items: StateItem[]): Promise<DeadLetter[]> {
    const bodies = await this.deps.messages.bodies(items);
    return mapLimit(items, 8, async (item) => {
      const body = bodies.get(item.pk);
      const history = await this.deps.messages.history(queue, item.message_id, item);
      return {
        message_id: item.message_id,
        key: body?.key ?? null,
        payload: body ? await this.deps.claims.payloadOf(body) : undefined,
        headers: body?.headers ?? {},
        enqueued_at: body?.produced_at ?? iso(item.produced_at),
        dead_at: iso(item.dead_at),
        attempts: history.map(attemptView),
        ...deliveryContext(body ?? {}),
      };
    });
  }

  /**
   * The queue's stats. `keepMarks`: the sweep's look, which keeps where each shard's commit point
   * is for the next look's `commit_stalled_seconds`.
   */
  async stats(queue: string, config: QueueConfig, options: { keepMarks?: boolean } = {}) {
    const now = this.now();
    const shards = await this.shardsOf(queue);
    const perShard = await Promise.all(shards.map((shard) => this.rangeShardStats(queue, shard, now)));
    // The totals first: reading them writes this instance's pending counts, the stored bytes too.
    const [dead, totals, held, pause, samples, stall] = await Promise.all([
      this.deadStats(queue, now),
      this.deps.counters.stats(queue),
      config.ordered ? this.deps.keyOrder.heldInHoldAreas(queue, shards) : 0,
      this.deps.controls.get(queue),
      this.deps.samples.get(queue),
      this.commitStall(queue, perShard, now, options.keepMarks ?? false),
    ]);
    const storedBytes = await this.deps.storage.byReader(queue, config);
    const sum = (f: (s: (typeof perShard)[number]) => number) => perShard.reduce((a, s) => a + f(s), 0);
    const unacked = sum((s) => s.ready + s.inFlight + s.delayed) + held;
    return {
      depth: sum((s) => s.ready),
      in_flight: sum((s) => s.inFlight),
      delayed: sum((s) => s.delayed),
      /** Ordered queues: messages waiting in their keys' hold areas, behind a busy or parked key. */
      held,
      dlq_depth: dead.dlq_depth,
      parked_keys: dead.parked_keys,
      oldest_unacked_age_seconds: Math.max(0, ...perShard.map((s) => s.age)),
      oldest_unacked_age_seconds_by_shard: Object.fromEntries(perShard.map((s) => [s.shard, s.age])),
      /** How long a shard's lowest unfinished entry has not moved (a poison head, on an ordered queue). */
      commit_stalled_seconds: Math.max(0, ...Object.values(stall)),
      commit_stalled_seconds_by_shard: stall,
      dlq_oldest_age_seconds: dead.dlq_oldest_age_seconds,
      produced_total: totals.produced ?? 0,
      acked_total: totals.acked ?? 0,
      redelivered_total: totals.redelivered ?? 0,
      stale_receipts_total: totals.stale_receipts ?? 0,
      expired_unprocessed_total: totals.expired_unprocessed ?? 0,
      /** Requests refused over a quota (429), in all and by the API key refused. */
      throttled_total: totals.throttled ?? 0,
      throttled_by_key: totals.throttledByKey,
      /** What the queue holds unconsumed: a push queue's slowest consumer's, each consumer's beside it. */
      stored_bytes: Math.max(0, ...Object.values(storedBytes)),
      ...(config.consumers.length ? { stored_bytes_by_consumer: storedBytes } : {}),
      storage_quota_bytes: storageQuotaBytes(config),
      /** Set while an admin paused deliveries (POST /queues/{q}/pause). */
      paused: pause ?? null,
      /** Whether the unacked backlog shrinks, and when it will be gone at the last minute's rates. */
      drain: drainView(unacked, now, samples.latest, samples.previous),
    };
  }

  /**
   * SQS's PurgeQueue on a pull queue: everything produced before now goes unread (receives ack
   * it as they meet it: QueueControls). Dead letters stay: SQS's DLQ is a queue of its own.
   * Audited.
   */
  async purgeQueue(queue: string, config: QueueConfig, actor: string): Promise<void> {
    if (config.consumers.length)
      throw new InvalidRequestError(
        `queue ${queue} is consumed by Lambda consumers: only a pull queue can be purged`,
      );
    const now = this.now();
    await this.deps.controls.purge(queue, now);
    await this.deps.audit.record(queue, { action: 'purge_queue', actor, target: queue }, now);
  }

  /**
   * Pauses deliveries of the queue: receive answers nothing and its Lambda consumers hold their
   * batches, while produce goes on. Audited with its reason; pausing again replaces the reason.
   */
  async pause(queue: string, reason: string, actor: string): Promise<Pause> {
    const now = this.now();
    const pause = { paused_at: iso(now), actor, reason };
    await this.deps.controls.pause(queue, pause);
    await this.deps.audit.record(queue, { action: 'pause', actor, target: queue, reason }, now);
    return pause;
  }

  /** Ends a pause; audited. A queue that was not paused answers NOT_FOUND. */
  async resume(queue: string, reason: string | undefined, actor: string): Promise<{ resumed: Pause }> {
    const ended = await this.deps.controls.resume(queue);
    if (!ended) throw new NotFoundError(`the queue ${queue} is not paused`);
    await this.deps.audit.record(
      queue,
      {
        action: 'resume',
        actor,
        target: queue,
        ...(reason !== undefined ? { reason } : {}),
        detail: { paused_at: ended.paused_at },
      },
      this.now(),
    );
    return { resumed: ended };
  }

  /** A shard of the lease layer: its unfinished ranges, from the commit point on. */
  private async rangeShardStats(queue: string, shard: string, now: number) {
    const { ranges, messages } = this.deps;
    const [open, inDelayStore] = await Promise.all([
      ranges.commitHint(queue, shard).then((hint) => ranges.from(queue, shard, hint, STATS_RANGES)),
      messages.count(gsi.delayed(queue, shard)),
    ]);
    let ready = 0;
    let inFlight = 0;
    // Retries waiting in their ranges are delayed as much as those in the delay store.
    let delayed = inDelayStore;
    for (const range of open) {
      for (let i = 0; i < range.count; i++) {
        const status = entryStatus(range, i, now);
        if (status === 'free') ready++;
        else if (status === 'leased' || status === 'expired') inFlight++;
        else if (status === 'retrying') delayed++;
      }
    }
    const lowest = open.find((r) => !isFinished(r));
    const index = lowest ? firstUnfinished(lowest, now) : undefined;
    return {
      shard,
      ready,
      inFlight,
      delayed,
      age: ageSeconds(now, lowest?.enqueuedAt),
      commit: lowest && index !== undefined ? `${lowest.start}/${index}` : undefined,
    };
  }

  /**
   * A Lambda consumer's own counts. Its backlog is the part of the stream its event source
   * mapping has not read yet (Lambda's IteratorAge), which no item here knows; nor does it have
   * a window, receipts or acked and produced totals (the push path does not count them).
   */
  async consumerStats(namespace: string, options: { keepMarks?: boolean } = {}) {
    const now = this.now();
    const shards = await this.shardsOf(namespace);
    const perShard = await Promise.all(shards.map((shard) => this.rangeShardStats(namespace, shard, now)));
    const [dead, totals, held, stall] = await Promise.all([
      this.deadStats(namespace, now),
      this.deps.counters.stats(namespace),
      this.deps.keyOrder.heldInHoldAreas(namespace, shards),
      this.commitStall(namespace, perShard, now, options.keepMarks ?? false),
    ]);
    return {
      consumer: namespaceParts(namespace).consumer,
      ready: perShard.reduce((a, s) => a + s.ready, 0),
      in_flight: perShard.reduce((a, s) => a + s.inFlight, 0),
      delayed: perShard.reduce((a, s) => a + s.delayed, 0),
      held,
      ...dead,
      nacked_total: totals.nacked ?? 0,
      dead_lettered_total: totals.dead_lettered ?? 0,
      expired_unprocessed_total: totals.expired_unprocessed ?? 0,
      commit_stalled_seconds: Math.max(0, ...Object.values(stall)),
    };
  }

  /** Each shard's `commit_stalled_seconds` against the sweep's marks; the sweep's look keeps new ones. */
  private async commitStall(
    namespace: string,
    perShard: readonly { shard: string; commit: string | undefined }[],
    now: number,
    keepMarks: boolean,
  ): Promise<Record<string, number>> {
    const positions = Object.fromEntries(perShard.map((s) => [s.shard, s.commit]));
    const marks = await this.deps.commitMarks.get(namespace);
    const stall = commitStall(marks, positions, now);
    // Written only when a commit point moved: a stalled or empty queue costs no write a minute.
    if (keepMarks && !sameMarks(stall.marks, marks)) await this.deps.commitMarks.set(namespace, stall.marks);
    return stall.stalledSeconds;
  }

  /** The shards of the queue's stream: a consumer's state is kept per shard of its queue's. */
  private shardsOf(name: string): Promise<string[]> {
    return this.deps.shards.shards(streamName(this.deps.tenant, namespaceParts(name).queue));
  }

  private async deadStats(queue: string, now: number) {
    const m = this.deps.messages;
    const [dlqDepth, oldestDead, parked] = await Promise.all([
      m.count(gsi.dead(queue)),
      m.partition(gsi.dead(queue), { limit: 1 }),
      this.deps.keyOrder.parkedKeys(queue),
    ]);
    return {
      dlq_depth: dlqDepth,
      parked_keys: parked.length,
      dlq_oldest_age_seconds: ageSeconds(now, oldestDead[0]?.dead_at),
    };
  }
}

function decodeCursor(cursor: string | undefined, partition: string): Record<string, unknown> | undefined {
  if (!cursor) return undefined;
  try {
    const key = cursorSchema.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    if (key.gsi1pk !== partition) throw new Error('cursor of another queue');
    return key;
  } catch {
    throw new InvalidRequestError('cursor is not a cursor this listing returned', [
      { path: 'cursor', message: 'invalid' },
    ]);
  }
}

/** The range's lowest entry not yet acked or failed. */
function firstUnfinished(range: Range, now: number): number | undefined {
  for (let i = 0; i < range.count; i++) {
    const status = entryStatus(range, i, now);
    if (status !== 'acked' && status !== 'failed') return i;
  }
  return undefined;
}
