import { mapLimit } from '../core/async.js';
import { isNamespace, keyOrdered, type QueueConfig } from '../core/config.js';
import { type Envelope, payloadBytes } from '../core/envelope.js';
import { entryStatus, type Lease, payloadSource, type Range, waitsInRange } from '../core/ranges.js';
import { retentionTtls } from '../core/retention.js';
import { afterFailure, type FailureReason, type Outcome } from '../core/retry-policy.js';
import type { Counters } from '../store/counters.js';
import type { KeyBlocks } from '../store/key-blocks.js';
import type { KeyStates } from '../store/key-states.js';
import type { HistoryRecord, MessageStore, SegmentSource } from '../store/messages.js';
import { deliveryStamp, type RangeStore } from '../store/ranges.js';
import type { SegmentStore } from '../store/segments.js';
import type { StorageMeter } from '../store/storage.js';
import { MAX_RANGES } from './ordered-look.js';

/**
 * A failed delivery of an entry of the lease layer (a nack, a release, or a lease the sweep found
 * expired). The message's own item is the exception path: the new place is written first (the
 * item in the delay store or the DLQ, the attempt's history in it), then the entry is finished in
 * its range.
 * If the range says the entry was acked meanwhile, the item is taken back; if someone else
 * finished it as failed, what was written stays (the attempt did fail). A crash in between leaves
 * an item at this position, which the next try (the sweep's, at the latest) recognises and
 * finishes the range for.
 */

export interface RangeFailuresDeps {
  messages: MessageStore;
  ranges: RangeStore;
  segments: SegmentStore;
  counters: Counters;
  keys: KeyStates;
  blocks: KeyBlocks;
  storage: Pick<StorageMeter, 'deadLettered'>;
}

export interface FailedEntry {
  queue: string;
  range: Range;
  index: number;
  sequence: string;
  envelope: Envelope;
  lease: Lease;
  /** Its lease was moved out of the range (the gap cap): the message's item holds it. */
  evicted?: boolean;
}

export interface EntryFailure {
  reason: FailureReason;
  error?: string;
  retryAfterSeconds?: number;
  /** A nack ends a live lease; the sweep ends an expired one. */
  lease: 'live' | 'expired';
  /** Give the entry back without a failed attempt (same attempt number, no history). */
  release?: boolean;
}

export class RangeFailures {
  constructor(private readonly deps: RangeFailuresDeps) {}

  /**
   * The outcome, or undefined when the lease was no longer this delivery's (stale). An ordered
   * pull queue's retry waits in place, first of its key, and is delivered again there; a dead
   * letter, or a retry whose lease the gap cap moved out of its range, marks its key first (parked
   * behind it, or busy with it) and blocks it on its shard, so the key's later messages wait.
   */
  async fail(
    config: QueueConfig,
    failed: FailedEntry,
    f: EntryFailure,
    now: number,
  ): Promise<Outcome | undefined> {
    // An ordered queue's entry delivered again in place carries its attempt in its range.
    const attempt = failed.range.attempts.get(failed.index);
    const e = attempt === undefined ? failed : { ...failed, envelope: { ...failed.envelope, attempt } };
    const outcome = this.outcomeOf(config, e, f, now);
    const ordered = keyOrdered(e.queue, config);
    const key = ordered ? e.envelope.key : undefined;
    const waits = ordered
      ? !e.evicted
      : f.lease === 'live' && !f.release && !e.evicted && !isNamespace(e.queue);
    if (outcome.kind === 'retry' && waits && waitsInRange(config, outcome.dueAt, now))
      return this.waitInRange(config, e, f, outcome, now);
    if (key === undefined) return this.failEntry(config, e, f, outcome, now);
    await this.blockKey(e.queue, e.range.shard, key, e.envelope.message_id, outcome, now);
    const done = await this.failEntry(config, e, f, outcome, now);
    // Parked for a failure that did not land: the entry was acked meanwhile, so the key is free.
    if (!done && outcome.kind === 'dead') {
      const fresh = await this.deps.ranges.get(e.queue, e.range.shard, e.range.start);
      if (fresh && entryStatus(fresh, e.index, now) === 'acked')
        await this.deps.keys.unpark(e.queue, key, e.envelope.message_id);
    }
    return done;
  }

  /**
   * An ordered pull queue's key, before the failure that takes its message out of the ranges:
   * busy with the message (its retry comes back through the log) or parked behind it (dead), then
   * blocked on its shard, so a receiver that sees the entry finished sees the key blocked.
   */
  private async blockKey(
    queue: string,
    shard: string,
    key: string,
    messageId: string,
    outcome: Outcome,
    now: number,
  ): Promise<boolean> {
    const marked =
      outcome.kind === 'retry'
        ? (await this.deps.keys.claim(queue, key, messageId)) !== undefined
        : await this.deps.keys.park(queue, key, messageId, shard, now);
    await this.deps.blocks.block(queue, shard, key);
    return marked;
  }

  private outcomeOf(config: QueueConfig, e: FailedEntry, f: EntryFailure, now: number): Outcome {
    const env = e.envelope;
    return f.release
      ? { kind: 'retry', nextAttempt: env.attempt, dueAt: now + (f.retryAfterSeconds ?? 0) * 1000 }
      : afterFailure(config, {
          attempt: env.attempt,
          reason: f.reason,
          ...(f.retryAfterSeconds !== undefined ? { retryAfterSeconds: f.retryAfterSeconds } : {}),
          now,
        });
  }

  /**
   * A retry that waits in its range: the attempt goes into a history item of its own, then the
   * entry waits in its range (the lease ends there) until the sweep appends its retry entry, or,
   * on an ordered queue, until it is due and delivered again in place (as its next attempt). No
   * state item, no index: two writes. The history item is taken back when the range write does
   * not land (the entry was acked, or its lease expired first and the sweep's failure records it).
   */
  private async waitInRange(
    config: QueueConfig,
    e: FailedEntry,
    f: EntryFailure,
    outcome: Extract<Outcome, { kind: 'retry' }>,
    now: number,
  ): Promise<Outcome | undefined> {
    const { messages, ranges } = this.deps;
    const id = e.envelope.message_id;
    const ttls = retentionTtls(config, now);
    const ordered = keyOrdered(e.queue, config);
    const record = attemptRecord(e.envelope, e.lease, f, now, ordered);
    if (!f.release) await messages.putHistory(e.queue, id, record, ttls.deadTtl);
    const retry = (lease: 'live' | 'expired') =>
      ranges.retry(e.queue, e.range, e.index, e.lease.deliveredAt, outcome.dueAt, now, {
        lease,
        ...(ordered ? { attempt: outcome.nextAttempt } : {}),
      });
    if (await retry(f.lease)) {
      if (ordered) await this.releaseRest(config, e);
      return this.finished(e, outcome, f, now, ttls);
    }
    const fresh = await ranges.get(e.queue, e.range.shard, e.range.start);
    const waiting = fresh?.retrying.get(e.index);
    // This very write landed (the SDK retried it after a lost answer): done. Another nack of the
    // same delivery that won keeps the history item (it is the same attempt's).
    if (waiting) return waiting.dueAt === outcome.dueAt ? this.finished(e, outcome, f, now, ttls) : undefined;
    const expired = fresh !== undefined && entryStatus(fresh, e.index, now) === 'expired';
    // The lease ran out just before: the nack still ends the delivery, where it is on an ordered
    // queue, through the delay store on another.
    if (expired && ordered && (await retry('expired'))) {
      await this.releaseRest(config, e);
      return this.finished(e, outcome, f, now, ttls);
    }
    if (!f.release) await messages.deleteHistory(e.queue, id, record.generation);
    if (expired && !ordered) return this.failEntry(config, e, f, outcome, now);
    return undefined;
  }

  /**
   * An ordered queue's per-key batch (`max_per_key` > 1): the failed message's later ones of the
   * same delivery go back without an attempt, so nothing of the key is handled before its retry
   * (their acks answer stale). A range this read misses keeps its leases until they run out, and
   * the retry waits behind them.
   */
  private async releaseRest(config: QueueConfig, e: FailedEntry): Promise<void> {
    const tag = e.range.keys?.[e.index];
    if (config.max_per_key <= 1 || tag === undefined) return;
    const position = e.range.base + e.index;
    const after = await this.deps.ranges.from(e.queue, e.range.shard, e.range.start, MAX_RANGES);
    await mapLimit(after, 8, async (range) => {
      const rest = [...range.leases]
        .filter(([index]) => range.base + index > position && range.keys?.[index] === tag)
        .filter(
          ([, lease]) => lease.deliveredAt === e.lease.deliveredAt && lease.consumerId === e.lease.consumerId,
        )
        .map(([index]) => index);
      if (rest.length)
        await this.deps.ranges.endLeases(e.queue, range, rest, deliveryStamp(e.lease.deliveredAt));
    });
  }

  /**
   * The gap cap on a waiting retry (sweeper.ts): the message moves to the delay store, due when
   * it was, then the entry is finished in its range. If its retry entry was admitted first, the
   * item is taken back. A crash in between leaves the item, which the next pass recognises.
   */
  async moveRetry(config: QueueConfig, e: Omit<FailedEntry, 'lease'>, now: number): Promise<boolean> {
    const { messages, ranges } = this.deps;
    const waiting = e.range.retrying.get(e.index);
    if (!waiting) return false;
    const env = e.envelope;
    const ttls = retentionTtls(config, now);
    const at = { shard: e.range.shard, seq: e.sequence };
    const key = keyOrdered(e.queue, config) ? env.key : undefined;
    // An ordered queue's wait says its attempt (none: produced with a delay, not failed yet).
    const nextAttempt = waiting.attempt ?? (key !== undefined ? env.attempt : env.attempt + 1);
    const outcome = { kind: 'retry' as const, nextAttempt, dueAt: waiting.dueAt };
    if (key !== undefined) await this.blockKey(e.queue, e.range.shard, key, env.message_id, outcome, now);
    // No attempt in it: the nack's history item has it.
    const item =
      (await messages.failFromRange(at, env, outcome, now, ttls, { source: sourceOf(e) })) ??
      (await messages
        .get(e.queue, env.message_id)
        .then((existing) =>
          existing?.state === 'delayed' && existing.shard === at.shard && existing.seq === at.seq
            ? existing
            : undefined,
        ));
    if (!item) return false;
    if (await ranges.moveRetry(e.queue, e.range, e.index)) return true;
    const fresh = await ranges.get(e.queue, e.range.shard, e.range.start);
    if (!fresh?.retrying.has(e.index)) await messages.undoFailFromRange(item, ttls.tombstoneTtl, false);
    return false;
  }

  private async failEntry(
    config: QueueConfig,
    e: FailedEntry,
    f: EntryFailure,
    outcome: Outcome,
    now: number,
  ): Promise<Outcome | undefined> {
    const { messages, ranges } = this.deps;
    const env = e.envelope;
    const ttls = retentionTtls(config, now);
    const byAttempt = keyOrdered(e.queue, config);
    const attempt = f.release ? undefined : attemptRecord(env, e.lease, f, now, byAttempt);
    const source = sourceOf(e);
    // A dead letter keeps a copy of its body: a retry's entry has it from the entry it points to.
    const stored = outcome.kind === 'dead' ? await this.deps.segments.resolve(e.queue, env) : env;
    if (!stored) throw new Error(`the payload of ${env.message_id} is gone from its segment`);
    const at = { shard: e.range.shard, seq: e.sequence };
    const item = await messages.failFromRange(at, stored, outcome, now, ttls, {
      source,
      ...(attempt ? { attempt } : {}),
      ...(e.evicted ? { evicted: f.lease } : {}),
    });
    // An evicted lease's range already counts the entry finished: its item alone decides.
    if (e.evicted)
      return item ? this.finished({ queue: e.queue, envelope: stored }, outcome, f, now, ttls) : undefined;
    if (!item) {
      const existing = await messages.get(e.queue, env.message_id);
      const sameLife = existing?.produced_at === Date.parse(env.produced_at);
      const here = sameLife && existing?.shard === e.range.shard && existing.seq === e.sequence;
      // The gap cap moved this lease out of its range meanwhile: it fails from there.
      if (here && existing?.state === 'leased')
        return this.failEntry(config, { ...e, evicted: true }, f, outcome, now);
      // This entry's failure landed (ours, its answer lost and the write retried, or another's), or
      // the message already moved on to a later entry: either way the entry is finished.
      const landed = here && existing?.state !== 'ranged';
      if (landed || (sameLife && (existing?.entry ?? 0) > env.entry))
        await ranges.fail(e.queue, e.range, e.index, 'any', now);
      // The attempt the item recorded at this entry is this very one (its write landed, the SDK
      // retried it and the retry found it done): the failure is ours.
      const generation = byAttempt ? env.attempt : env.entry;
      const ours = existing?.hist?.some((h) => h.generation === generation && h.failed_at === now) === true;
      if (!(landed && ours)) return undefined;
      return this.finished({ queue: e.queue, envelope: stored }, outcome, f, now, ttls);
    }
    if (!(await ranges.fail(e.queue, e.range, e.index, f.lease, now))) {
      const fresh = await ranges.get(e.queue, e.range.shard, e.range.start);
      const status = fresh ? entryStatus(fresh, e.index, now) : 'acked';
      // A nack that lost the race with its own expiry still ended the delivery as a failure.
      const finishAnyway = status === 'expired' && (await ranges.fail(e.queue, e.range, e.index, 'any', now));
      if (!finishAnyway && status !== 'failed') {
        await messages.undoFailFromRange(item, ttls.tombstoneTtl, attempt !== undefined);
        return undefined;
      }
    }
    return this.finished({ queue: e.queue, envelope: stored }, outcome, f, now, ttls);
  }

  /**
   * A failed delivery of a message from a key's hold area (an ordered queue's Lambda consumer): the
   * message item with the attempt, its body inline (no segment entry to point at). Answers the
   * outcome, also when an earlier try of this very failure landed (it crashed before the hold item
   * went); undefined when the item says otherwise.
   */
  async failHeld(
    config: QueueConfig,
    held: { queue: string; shard: string; sequence: string; envelope: Envelope; lease: Lease },
    f: Pick<EntryFailure, 'reason' | 'error' | 'lease' | 'retryAfterSeconds'>,
    now: number,
  ): Promise<Outcome | undefined> {
    const env = held.envelope;
    const outcome = afterFailure(config, {
      attempt: env.attempt,
      reason: f.reason,
      now,
      ...(f.retryAfterSeconds !== undefined ? { retryAfterSeconds: f.retryAfterSeconds } : {}),
    });
    const ttls = retentionTtls(config, now);
    const attempt = attemptRecord(env, held.lease, f, now);
    const at = { shard: held.shard, seq: held.sequence };
    const item = await this.deps.messages.failFromRange(at, env, outcome, now, ttls, { attempt });
    const failed = { queue: held.queue, envelope: env };
    if (item) return this.finished(failed, outcome, f, now, ttls);
    const existing = await this.deps.messages.get(held.queue, env.message_id);
    const landed =
      existing?.shard === held.shard && existing.seq === held.sequence && existing.state !== 'ranged';
    if (!landed) return undefined;
    return existing.state === 'dead' ? { kind: 'dead', reason: f.reason } : outcome;
  }

  /**
   * Whether the message of `env` went on past that entry: its item names a later entry of the same
   * life (a retry written from it), so what still names `env` (a hold item) is left over.
   */
  async movedOn(queue: string, env: Envelope): Promise<boolean> {
    const item = await this.deps.messages.get(queue, env.message_id);
    return item !== undefined && item.produced_at === Date.parse(env.produced_at) && item.entry > env.entry;
  }

  /**
   * The gap cap: moves a live lease out of its range into the message's item, then finishes the
   * entry in the range so the commit point can pass it. Taken back if the lease was acked first.
   */
  async evict(config: QueueConfig, e: FailedEntry, now: number): Promise<boolean> {
    const { keys, blocks } = this.deps;
    const id = e.envelope.message_id;
    // An ordered queue's head: its key names it first, so the key stays closed once the entry is
    // finished in its range (the moved lease's ack releases it: RangeReceiver.ack).
    const key = keyOrdered(e.queue, config) ? e.envelope.key : undefined;
    const claim = key !== undefined ? await keys.claim(e.queue, key, id) : undefined;
    if (key !== undefined) {
      await blocks.block(e.queue, e.range.shard, key);
      if (!claim) return false;
    }
    const moved = await this.moveLease(config, e, now);
    // Not moved: the lease stays in its range, where its ack does not touch the key, so a key this
    // move took is given back (one that held the key before keeps it).
    if (!moved && key !== undefined && claim === 'taken') await keys.release(e.queue, key, id);
    return moved;
  }

  /** The lease into the message's item, then its entry finished in the range; undone if that fails. */
  private async moveLease(config: QueueConfig, e: FailedEntry, now: number): Promise<boolean> {
    const { messages, ranges } = this.deps;
    const at = { shard: e.range.shard, seq: e.sequence };
    const item = await messages.evictLease(at, e.envelope, e.lease, sourceOf(e));
    if (!item) return false;
    if (await ranges.moveLease(e.queue, e.range, e.index, e.lease, now)) return true;
    const fresh = await ranges.get(e.queue, e.range.shard, e.range.start);
    const status = fresh ? entryStatus(fresh, e.index, now) : 'acked';
    // Expired meanwhile: the item's lease expires too, and the sweep fails it from there. Extended
    // meanwhile (still leased): undone, and moved with its new expiry on a later pass.
    if (status === 'expired' && (await ranges.fail(e.queue, e.range, e.index, 'any', now))) return true;
    if (status !== 'failed')
      await messages.undoFailFromRange(item, retentionTtls(config, now).tombstoneTtl, false);
    return false;
  }

  /** What follows a failed attempt that landed: its counts, and a dead letter's event and bytes (`e.envelope` has its payload). */
  private async finished(
    e: Pick<FailedEntry, 'queue' | 'envelope'>,
    outcome: Outcome,
    f: Pick<EntryFailure, 'lease' | 'release'>,
    now: number,
    ttls: { deadTtl: number },
  ): Promise<Outcome> {
    const dead = outcome.kind === 'dead';
    await Promise.all([
      // A dead letter holds its bytes until it leaves the DLQ (store/storage.ts).
      dead
        ? this.deps.storage.deadLettered(e.queue, payloadBytes(e.envelope), ttls.deadTtl * 1000)
        : Promise.resolve(),
      this.deps.counters.addStats(e.queue, {
        ...(f.lease === 'live' && !f.release ? { nacked: 1 } : {}),
        ...(dead ? { dead_lettered: 1 } : {}),
      }),
      dead
        ? this.deps.messages.putEvent(
            e.queue,
            e.envelope.message_id,
            { event: 'dead_lettered', detail: { reason: outcome.reason } },
            now,
            ttls.deadTtl,
          )
        : Promise.resolve(),
    ]);
    return outcome;
  }
}

/**
 * The failed attempt as the message's history keeps it, one record a delivery: by entry, or on an
 * ordered queue (which delivers an entry again in place) by attempt.
 */
function attemptRecord(
  env: Envelope,
  lease: Lease,
  f: Pick<EntryFailure, 'reason' | 'error'>,
  now: number,
  byAttempt = false,
): HistoryRecord {
  return {
    generation: byAttempt ? env.attempt : env.entry,
    attempt: env.attempt,
    ...(lease.consumerId !== undefined ? { consumer_id: lease.consumerId } : {}),
    reason: f.reason,
    ...(f.error !== undefined ? { error: f.error } : {}),
    delivered_at: lease.deliveredAt,
    failed_at: now,
  };
}

function sourceOf(e: Pick<FailedEntry, 'range' | 'index' | 'envelope'>): SegmentSource {
  return payloadSource(e.range, e.index, e.envelope.ref);
}
