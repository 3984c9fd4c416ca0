import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, KinesisStreamBatchResponse, KinesisStreamEvent } from 'aws-lambda';
import type { RangeAdmission } from '../admission/range-admission.js';
import type { ClaimStore } from '../claims/claims.js';
import type { RangeFailures } from '../consume/range-failures.js';
import { mapLimit } from '../core/async.js';
import { consumerNamespace, type QueueConfig, streamName } from '../core/config.js';
import type { Envelope } from '../core/envelope.js';
import { compareSequence, entryStatus, type Lease, type Range } from '../core/ranges.js';
import { type CounterName, countFor } from '../observability/metrics.js';
import type { Counters } from '../store/counters.js';
import type { NewLease, RangeStore } from '../store/ranges.js';
import type { SegmentStore } from '../store/segments.js';
import {
  assertStream,
  type ConsumerRecord,
  consumerRecords,
  handlerFailure,
  type MessageHandler,
  messageOf,
} from './records.js';

/**
 * A Lambda consumer of an unordered queue on the lease layer (DESIGN §2a): each batch is admitted
 * into the consumer's own namespace like dispatch admits a queue's (one segment, a few ranges),
 * leased one write per range as the invocation reaches it, handed to the user's handler, and
 * acked one write per range. A failing message takes the pull path's exception path (delay tier,
 * then the DLQ with its history), so it never blocks its shard; only an AWS call that fails after
 * the SDK's retries leaves records to the event source's retry.
 *
 * The event source runs one invocation per shard at a time and retries a batch only once the
 * invocation before is over, so a lease this invocation did not write was left by one that
 * crashed or timed out: it counts as that delivery's failed attempt (as the sweep would count it
 * at its expiry), and the message comes back through its delay tier. A message that kills every
 * invocation that handles it therefore reaches the DLQ instead of stalling its shard.
 */

export interface RangePushConsumerDeps {
  tenant: string;
  queue: string;
  consumer: string;
  config: QueueConfig;
  admission: RangeAdmission;
  ranges: RangeStore;
  segments: SegmentStore;
  rangeFailures: RangeFailures;
  claims: ClaimStore;
  /** Its totals are written at the end of each invocation: the instance may be frozen after it. */
  counters: Pick<Counters, 'flush'>;
  logger: Logger;
  /** Per invocation, under the consumer's namespace: received, redelivered, acked, nacked, dead-lettered. */
  metrics: Metrics;
  // biome-ignore lint/suspicious/noExplicitAny: the payload type is the user's; the envelope carries unknown.
  handler: MessageHandler<any>;
  /** Records handled at once. */
  concurrency: number;
  /** Below this much time left, no new record is started. */
  timeoutMarginMs: number;
}

/** A record of the batch at its entry in the namespace's ranges. */
interface Located {
  sequence: string;
  envelope: Envelope;
  range: Range;
  index: number;
}

/** One range's entries as this invocation leases, runs and acks them. */
class RangeRun {
  private leasing?: Promise<ReadonlySet<number>>;
  private readonly done: number[] = [];
  private outstanding: number;
  /** Handed to the handler: never given back, whatever happens after. */
  readonly started = new Set<number>();

  constructor(
    readonly range: Range,
    readonly indexes: readonly number[],
  ) {
    this.outstanding = indexes.length;
  }

  /** The indexes this invocation holds, leased on first need with one write for all of them. */
  held(lease: (range: Range, indexes: readonly number[]) => Promise<ReadonlySet<number>>) {
    this.leasing ??= lease(this.range, this.indexes);
    return this.leasing;
  }

  /** Marks one entry settled; answers the entries to ack once none is outstanding. */
  settle(index: number, handled: boolean): number[] | undefined {
    if (handled) this.done.push(index);
    this.outstanding--;
    return this.outstanding === 0 ? this.rest() : undefined;
  }

  /** Handled entries not acked yet (the run stopped before its last entry). */
  rest(): number[] {
    return this.done.splice(0);
  }
}

export class RangePushConsumer {
  private readonly namespace: string;
  private readonly stream: string;

  constructor(private readonly deps: RangePushConsumerDeps) {
    this.namespace = consumerNamespace(deps.queue, deps.consumer);
    this.stream = streamName(deps.tenant, deps.queue);
  }

  async handle(event: KinesisStreamEvent, context: Context): Promise<KinesisStreamBatchResponse> {
    assertStream(event, this.stream);
    const records = consumerRecords(event.Records, this.deps.consumer, this.deps.logger);
    const report = (left: readonly { sequence: string }[]) => ({
      batchItemFailures: left.map((l) => ({ itemIdentifier: l.sequence })),
    });
    const offered = records.map(({ record, envelope }: ConsumerRecord) => ({
      sequence: record.kinesis.sequenceNumber,
      envelope,
    }));
    // Nothing is admitted or leased when no record could start: the retry finds the batch untouched.
    if (!offered.length || context.getRemainingTimeInMillis() < this.deps.timeoutMarginMs)
      return report(offered);
    const shard = (event.Records[0] as (typeof event.Records)[number]).eventID.split(':')[0] as string;
    const taken = await this.deps.admission.admit(this.namespace, this.deps.config, shard, offered);
    const located = await this.locate(shard, offered.slice(0, taken));

    const now = Date.now();
    const lease: NewLease = {
      deliveredAt: now,
      // The invocation's own end: past it, the sweep counts a failed attempt.
      expiresAt: now + context.getRemainingTimeInMillis(),
      consumerId: `${this.deps.consumer}/${context.awsRequestId}`,
    };
    const counts: Partial<Record<CounterName, number>> = {};
    const count = (name: CounterName, n = 1) => {
      if (n) counts[name] = (counts[name] ?? 0) + n;
    };
    const abandoned = located.filter((l) => {
      const status = entryStatus(l.range, l.index, now);
      return status === 'leased' || status === 'expired';
    });
    await mapLimit(abandoned, 8, (l) => this.abandoned(l, now));
    const todo = located.filter((l) => entryStatus(l.range, l.index, now) === 'free');
    const runs = runsOf(todo);

    let halted = false;
    const unfinished: Located[] = [];
    await mapLimit(todo, this.deps.concurrency, async (l) => {
      const run = runs.get(l.range.start) as RangeRun;
      if (halted || context.getRemainingTimeInMillis() < this.deps.timeoutMarginMs) {
        unfinished.push(l);
        return;
      }
      try {
        const held = await run.held((range, indexes) => this.lease(range, indexes, lease));
        // Another invocation's (the event source's retry never overlaps one): left to the event source.
        if (!held.has(l.index)) return void unfinished.push(l);
        run.started.add(l.index);
        const handled = await this.deliver(l, lease, context, count);
        const toAck = run.settle(l.index, handled);
        if (toAck?.length) count('acked', await this.ack(run.range, toAck));
      } catch (err) {
        halted = true;
        unfinished.push(l);
        this.deps.logger.error('AWS call failed: the event source retries from this record', {
          sequenceNumber: l.sequence,
          error: (err as Error).message,
        });
      }
    });
    await mapLimit([...runs.values()], 8, async (run) => {
      const rest = run.rest();
      if (!rest.length) return;
      try {
        count('acked', await this.ack(run.range, rest));
      } catch (err) {
        // Unacked, they expire with this invocation's leases: delivered again, never lost.
        this.deps.logger.warn('could not ack handled messages', { error: (err as Error).message });
      }
    });
    await this.giveBack(unfinished, runs, lease);
    countFor(this.deps.metrics, this.namespace, counts);
    await this.deps.counters.flush();
    return report([...unfinished, ...offered.slice(taken)]);
  }

  /**
   * Each admitted record of the batch at its entry: in the ranges from the one holding the first
   * record to the one holding the last, mapped through their segments. A copy admission passed
   * over (a producer's retry, a second copy of a retry's entry) has no entry and is left out.
   */
  private async locate(shard: string, offered: readonly { sequence: string }[]): Promise<Located[]> {
    const first = offered[0]?.sequence;
    const last = offered.at(-1)?.sequence;
    if (first === undefined || last === undefined) return [];
    const { ranges, segments } = this.deps;
    const start = (await ranges.containing(this.namespace, shard, first))?.start ?? first;
    // Each range has an entry of the batch, so there are at most as many as records (+1 begun before).
    const covering = (await ranges.from(this.namespace, shard, start, offered.length + 1, true)).filter(
      (r) => compareSequence(r.start, last) <= 0,
    );
    const wanted = new Set(offered.map((o) => o.sequence));
    const perRange = await mapLimit(covering, 8, async (range) => {
      const entries = (await segments.get(this.namespace, shard, range.segment)) ?? [];
      return entries
        .slice(range.segment.offset, range.segment.offset + range.count)
        .flatMap((e, index) =>
          wanted.has(e.sequence) ? [{ sequence: e.sequence, envelope: e.envelope, range, index }] : [],
        );
    });
    return perRange.flat();
  }

  /** Leases the run's entries in one write; after a lost race, what a fresh read shows free. */
  private async lease(
    range: Range,
    indexes: readonly number[],
    lease: NewLease,
  ): Promise<ReadonlySet<number>> {
    const { ranges } = this.deps;
    if (await ranges.lease(this.namespace, range, indexes, lease)) return new Set(indexes);
    const fresh = await ranges.get(this.namespace, range.shard, range.start);
    const free = fresh ? indexes.filter((i) => entryStatus(fresh, i, lease.deliveredAt) === 'free') : [];
    return free.length && (await ranges.lease(this.namespace, range, free, lease))
      ? new Set(free)
      : new Set();
  }

  /** Hands one leased entry to the handler; true when it returned (the entry is to be acked). */
  private async deliver(
    l: Located,
    lease: NewLease,
    context: Context,
    count: (name: CounterName) => void,
  ): Promise<boolean> {
    // Outside the handler's try: a failed read is the infrastructure's, not the message's.
    const envelope = await this.deps.segments.resolve(this.namespace, l.envelope);
    if (!envelope) throw new Error(`the payload of ${l.envelope.message_id} is gone from its segment`);
    const message = messageOf(envelope, await this.deps.claims.payloadOf(envelope), envelope.attempt);
    count('received');
    if (envelope.attempt > 1) count('redelivered');
    try {
      await this.deps.handler(message, context);
      return true;
    } catch (err) {
      const { reason, error } = handlerFailure(err);
      const outcome = await this.deps.rangeFailures.fail(
        this.deps.config,
        { queue: this.namespace, ...l, lease: leaseOf(lease) },
        { reason, error, lease: 'live' },
        Date.now(),
      );
      if (outcome) count('nacked');
      if (outcome?.kind === 'dead') count('dead_lettered');
      this.deps.logger.warn('the handler failed', {
        message_id: envelope.message_id,
        attempt: envelope.attempt,
        reason,
        error,
        outcome: outcome?.kind ?? 'stale',
      });
      return false;
    }
  }

  /** One write for the run's handled entries; entry by entry when one of them is no longer ours. */
  private async ack(range: Range, indexes: number[]): Promise<number> {
    const { ranges } = this.deps;
    if (await ranges.ack(this.namespace, range, indexes, Date.now())) return indexes.length;
    const one = await mapLimit(indexes, 8, (i) => ranges.ack(this.namespace, range, [i], Date.now()));
    const stale = indexes.filter((_, k) => !one[k]);
    if (stale.length)
      this.deps.logger.warn('the lease ended before the ack: those messages will be delivered again', {
        range: range.start,
        entries: stale,
      });
    return indexes.length - stale.length;
  }

  /** An earlier invocation's lease, left when it crashed or timed out: that delivery's failed attempt. */
  private async abandoned(l: Located, now: number): Promise<void> {
    const lease = l.range.leases.get(l.index);
    if (!lease) return;
    await this.deps.rangeFailures.fail(
      this.deps.config,
      { queue: this.namespace, ...l, lease },
      { reason: 'lease_expired', lease: 'abandoned' },
      now,
    );
  }

  /** Leases written but never handed to the handler go back, so the retry takes no attempt for them. */
  private async giveBack(unfinished: Located[], runs: Map<string, RangeRun>, lease: NewLease): Promise<void> {
    const byRange = new Map<string, number[]>();
    for (const l of unfinished) byRange.set(l.range.start, [...(byRange.get(l.range.start) ?? []), l.index]);
    await mapLimit([...byRange], 8, async ([start, indexes]) => {
      const run = runs.get(start) as RangeRun;
      const held = await run.held(async () => new Set());
      const mine = indexes.filter((i) => held.has(i) && !run.started.has(i));
      if (!mine.length) return;
      try {
        await this.deps.ranges.release(this.namespace, run.range, mine, lease);
      } catch (err) {
        // Left leased, the retry counts them as attempts: more redelivery, never a lost message.
        this.deps.logger.warn('could not give back unstarted leases', { error: (err as Error).message });
      }
    });
  }
}

function runsOf(todo: readonly Located[]): Map<string, RangeRun> {
  const byRange = new Map<string, Located[]>();
  for (const l of todo) byRange.set(l.range.start, [...(byRange.get(l.range.start) ?? []), l]);
  return new Map(
    [...byRange].map(([start, ls]) => [
      start,
      new RangeRun(
        ls[0]?.range as Range,
        ls.map((l) => l.index),
      ),
    ]),
  );
}

function leaseOf(lease: NewLease): Lease {
  return {
    expiresAt: lease.expiresAt,
    deliveredAt: lease.deliveredAt,
    ...(lease.consumerId !== undefined ? { consumerId: lease.consumerId } : {}),
  };
}
