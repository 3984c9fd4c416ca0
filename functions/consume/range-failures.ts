import { isNamespace, keyOrdered, type QueueConfig } from '../core/config.js';
import { type Envelope, payloadBytes } from '../core/envelope.js';
import { entryStatus, type Lease, payloadSource, type Range, waitsInRange } from '../core/ranges.js';
import { retentionTtls } from '../core/retention.js';
import { afterFailure, type FailureReason, type Outcome } from '../core/retry-policy.js';
import type { Counters } from '../store/counters.js';
import type { KeyStates } from '../store/key-states.js';
import type { HistoryRecord, MessageStore, SegmentSource } from '../store/messages.js';
import type { RangeStore } from '../store/ranges.js';
import type { SegmentStore } from '../store/segments.js';
import type { StorageMeter } from '../store/storage.js';

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
   * pull queue's entry is its key's head: the key is marked first (busy with the retry, or parked
   * behind it dead), so admission holds the key's next messages from then on.
   */
  async fail(
    config: QueueConfig,
    e: FailedEntry,
    f: EntryFailure,
    now: number,
  ): Promise<Outcome | undefined> {
    const outcome = this.outcomeOf(config, e, f, now);
    const key = keyOrdered(e.queue, config) ? e.envelope.key : undefined;
    if (
      outcome.kind === 'retry' &&
      f.lease === 'live' &&
      !f.release &&
      !e.evicted &&
      !isNamespace(e.queue) &&
      waitsInRange(config, outcome.dueAt, now)
    )
      return this.waitInRange(config, e, f, outcome, now);
    if (key === undefined) return this.failEntry(config, e, f, outcome, now);
    const id = e.envelope.message_id;
    if (outcome.kind === 'retry') await this.deps.keys.claim(e.queue, key, id);
    else await this.deps.keys.park(e.queue, key, id, e.range.shard, now);
    const failed = await this.failEntry(config, e, f, outcome, now);
    // Parked for a failure that did not land: the entry was acked meanwhile, so the key is free.
    if (!failed && outcome.kind === 'dead') {
      const fresh = await this.deps.ranges.get(e.queue, e.range.shard, e.range.start);
      if (fresh && entryStatus(fresh, e.index, now) === 'acked')
        await this.deps.keys.unpark(e.queue, key, id);
    }
    return failed;
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
   * A nack whose retry is due soon: the attempt goes into a history item of its own, then the
   * entry waits in its range (the lease ends there) until the sweep appends its retry entry. No
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
    await messages.putHistory(e.queue, id, attemptRecord(e.envelope, e.lease, f, now), ttls.deadTtl);
    if (await ranges.retry(e.queue, e.range, e.index, e.lease.deliveredAt, outcome.dueAt, now))
      return this.finished(e, outcome, f, now, ttls);
    const fresh = await ranges.get(e.queue, e.range.shard, e.range.start);
    const waiting = fresh?.retrying.get(e.index);
    // This very write landed (the SDK retried it after a lost answer): done. Another nack of the
    // same delivery that won keeps the history item (it is the same attempt's).
    if (waiting) return waiting.dueAt === outcome.dueAt ? this.finished(e, outcome, f, now, ttls) : undefined;
    await messages.deleteHistory(e.queue, id, e.envelope.entry);
    // The lease ran out just before: the nack still ends the delivery, through the delay store.
    if (fresh && entryStatus(fresh, e.index, now) === 'expired')
      return this.failEntry(config, e, f, outcome, now);
    return undefined;
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
    const outcome = { kind: 'retry' as const, nextAttempt: env.attempt + 1, dueAt: waiting.dueAt };
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
    const attempt = f.release ? undefined : attemptRecord(env, e.lease, f, now);
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
      const ours = existing?.hist?.some((h) => h.generation === env.entry && h.failed_at === now) === true;
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
   * The gap cap: moves a live lease out of its range into the message's item, then finishes the
   * entry in the range so the commit point can pass it. Taken back if the lease was acked first.
   */
  async evict(config: QueueConfig, e: FailedEntry, now: number): Promise<boolean> {
    const { messages, ranges } = this.deps;
    // An ordered queue's head: its key names it first, so the key stays closed once the entry is
    // finished in its range (the moved lease's ack releases it: RangeConsumer.ack).
    const key = keyOrdered(e.queue, config) ? e.envelope.key : undefined;
    if (key !== undefined && !(await this.deps.keys.claim(e.queue, key, e.envelope.message_id))) return false;
    const at = { shard: e.range.shard, seq: e.sequence };
    const item = await messages.evictLease(at, e.envelope, e.lease, sourceOf(e));
    if (!item) return false;
    if (await ranges.fail(e.queue, e.range, e.index, 'live', now)) return true;
    const fresh = await ranges.get(e.queue, e.range.shard, e.range.start);
    const status = fresh ? entryStatus(fresh, e.index, now) : 'acked';
    // Expired meanwhile: the item's lease expires too, and the sweep fails it from there.
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

/** The failed attempt as the message's history keeps it. */
function attemptRecord(
  env: Envelope,
  lease: Lease,
  f: Pick<EntryFailure, 'reason' | 'error'>,
  now: number,
): HistoryRecord {
  return {
    generation: env.entry,
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
