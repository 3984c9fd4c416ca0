import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, KinesisStreamBatchResponse, KinesisStreamEvent } from 'aws-lambda';
import type { RangeAdmission } from '../admission/range-admission.js';
import type { ClaimStore } from '../claims/claims.js';
import { mapLimit, sleep } from '../core/async.js';
import { consumerNamespace, type QueueConfig } from '../core/config.js';
import { compareSequence, entryStatus, takenOverTooOften } from '../core/ranges.js';
import type { FailureReason } from '../core/retry-policy.js';
import type { RangeFailures } from '../delivery/range-failures.js';
import { slowHandlers } from '../observability/alarm-rules.js';
import { countFor, recordDurations } from '../observability/metrics.js';
import type { Counters } from '../store/counters.js';
import type { KeyHolds } from '../store/key-holds.js';
import type { KeyStates } from '../store/key-states.js';
import { PAUSE_CHECK_MS, type QueueControls } from '../store/queue-controls.js';
import type { RangeStore } from '../store/ranges.js';
import type { SegmentStore } from '../store/segments.js';
import type { StorageMeter } from '../store/storage.js';
import { Invocation, type Located } from './invocation.js';
import { KeyedDelivery } from './keyed-delivery.js';
import { assertStream, type ConsumerRecord, consumerRecords, type MessageHandler } from './records.js';

/**
 * A Lambda consumer on the lease layer (docs/lambda-consumers.md): each batch is admitted
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
 * On an ordered queue, keyed-delivery.ts keeps each key's order.
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
  keys: KeyStates;
  holds: KeyHolds;
  /** Its totals are written at the end of each invocation: the instance may be frozen after it. */
  counters: Pick<Counters, 'flush' | 'addHandling'>;
  /** What the consumer acked is freed from the queue's storage, written with the totals. */
  storage: Pick<StorageMeter, 'release'>;
  logger: Logger;
  /** Per invocation, under the consumer's namespace: received, redelivered, acked, nacked, dead-lettered. */
  metrics: Metrics;
  // biome-ignore lint/suspicious/noExplicitAny: the payload type is the user's; the envelope carries unknown.
  handler: MessageHandler<any>;
  /** Records handled at once. */
  concurrency: number;
  /** Below this much time left, no new record is started. */
  timeoutMarginMs: number;
  /** A paused queue's batches are held (POST /queues/{q}/pause). */
  controls: Pick<QueueControls, 'isPaused'>;
}

/** How long an invocation holds a batch of a paused queue before handing it back. */
const PAUSE_HOLD_MS = 5000;

export class RangePushConsumer {
  private readonly namespace: string;
  private readonly stream: string;
  /** Its lease: a handler past half of it counts as slow (the handler-duration alarm). */
  private readonly timeoutSeconds: number;

  constructor(private readonly deps: RangePushConsumerDeps) {
    this.namespace = consumerNamespace(deps.queue, deps.consumer);
    this.stream = deps.config.stream;
    this.timeoutSeconds = deps.config.consumers.find((c) => c.name === deps.consumer)?.timeout_seconds ?? 60;
  }

  /**
   * While the queue is paused the batch waits here a few seconds, then goes back to the event
   * source untouched (its retry comes after a backoff): holding a little in the invocation spares
   * the shard a stream of empty invocations, and the retry after a resume finds it as it was.
   */
  private async heldByPause(context: Context): Promise<boolean> {
    const until = Date.now() + PAUSE_HOLD_MS;
    while (await this.deps.controls.isPaused(this.deps.queue)) {
      const left = Math.min(
        until - Date.now(),
        context.getRemainingTimeInMillis() - this.deps.timeoutMarginMs,
      );
      if (left <= 0) return true;
      await sleep(Math.min(PAUSE_CHECK_MS, left));
    }
    return false;
  }

  async handle(event: KinesisStreamEvent, context: Context): Promise<KinesisStreamBatchResponse> {
    assertStream(event, this.stream);
    const records = consumerRecords(event.Records, this.deps.consumer, this.deps.logger);
    const offered = records
      .filter((r) => !r.envelope.wake)
      .map(({ record, envelope }: ConsumerRecord) => ({ sequence: record.kinesis.sequenceNumber, envelope }));
    const report = (left: readonly { sequence: string }[]) => ({
      batchItemFailures: left.map((l) => ({ itemIdentifier: l.sequence })),
    });
    // Nothing is admitted or leased when no record could start: the retry finds the batch untouched.
    if (!records.length || context.getRemainingTimeInMillis() < this.deps.timeoutMarginMs)
      return report(offered);
    if (await this.heldByPause(context)) return report(offered);
    const shard = (event.Records[0] as (typeof event.Records)[number]).eventID.split(':')[0] as string;
    const taken = offered.length
      ? await this.deps.admission.admit(this.namespace, this.deps.config, shard, offered)
      : 0;
    const located = await this.locate(shard, offered.slice(0, taken));
    const now = Date.now();
    const status = new Map(located.map((l) => [l, entryStatus(l.range, l.index, now)]));
    const inState = (...states: string[]) => located.filter((l) => states.includes(status.get(l) as string));
    const left = inState('leased', 'expired');
    const todo = inState('leased', 'expired', 'free');
    const inv = new Invocation(
      { ...this.deps, namespace: this.namespace },
      context,
      this.deps.consumer,
      todo,
    );
    const takeovers = await inv.takeOver(left);
    const tooOften = (l: Located) => takenOverTooOften({ takeovers: takeovers.get(l) ?? 0 });

    if (this.deps.config.ordered) {
      const wakes = records.flatMap((r) =>
        r.envelope.wake && r.envelope.key !== undefined ? [r.envelope.key] : [],
      );
      await this.runOrdered(inv, shard, { todo, acked: inState('acked') }, wakes, tooOften);
    } else {
      await mapLimit(todo, this.deps.concurrency, (l) => this.runOne(inv, l, tooOften(l)));
    }
    await inv.finish();
    await this.deps.storage.release(this.namespace, inv.freedBytes, 0);
    countFor(this.deps.metrics, this.namespace, inv.counts);
    recordDurations(this.deps.metrics, this.namespace, 'handler_seconds', inv.handlerSeconds);
    await this.deps.counters.addHandling(this.namespace, {
      delivered: inv.counts.received ?? 0,
      redelivered: inv.counts.redelivered ?? 0,
      handled: inv.handlerSeconds.length,
      slow_handled: slowHandlers(inv.handlerSeconds, this.timeoutSeconds),
    });
    await this.deps.counters.flush();
    return report([...inv.unfinished, ...offered.slice(taken)]);
  }

  /** An ordered queue: the keys' records one after another, keys side by side; a key with only a wake record drains its hold area. */
  private async runOrdered(
    inv: Invocation,
    shard: string,
    { todo, acked }: { todo: readonly Located[]; acked: readonly Located[] },
    wakes: readonly string[],
    tooOften: (l: Located) => boolean,
  ): Promise<void> {
    const groups = new Map<string, Located[]>();
    const keyless: Located[] = [];
    for (const l of todo) {
      const key = l.envelope.key;
      if (key === undefined) keyless.push(l);
      else groups.set(key, [...(groups.get(key) ?? []), l]);
    }
    const ackedKeys = acked.flatMap((l) => l.envelope.key ?? []);
    for (const key of [...wakes, ...ackedKeys]) if (!groups.has(key)) groups.set(key, []);
    const states = await this.deps.keys.getMany(this.namespace, [...groups.keys()]);
    // A key still busy with a message acked in a batch offered again: the invocation that acked it
    // died before the key's release. Released here, so what waits behind it goes.
    for (const l of acked) {
      const state = states.get(l.envelope.key ?? '');
      if (state?.busy_with !== l.envelope.message_id) continue;
      await this.deps.keys.release(this.namespace, state.key, l.envelope.message_id);
      state.busy_with = undefined;
    }
    const keyed = new KeyedDelivery(
      { ...this.deps, namespace: this.namespace, failures: this.deps.rangeFailures },
      inv,
      shard,
      tooOften,
    );
    await Promise.all([
      mapLimit([...groups], this.deps.concurrency, ([key, entries]) =>
        keyed.runKey(entries, states.get(key) ?? { key }),
      ),
      mapLimit(keyless, this.deps.concurrency, (l) => this.runOne(inv, l, tooOften(l))),
    ]);
  }

  /** An entry with no key to keep in order: delivered, or failed when taken over too often. */
  private runOne(inv: Invocation, l: Located, tooOften: boolean): Promise<boolean> {
    return inv.run(l, () =>
      tooOften
        ? this.failLive(inv, l, { reason: 'lease_expired' }).then(() => false)
        : inv.deliver(l.envelope, (f) => this.failLive(inv, l, f)),
    );
  }

  /** A failed attempt of an entry this invocation holds: the pull nack's path. */
  private failLive(
    inv: Invocation,
    l: Located,
    f: { reason: FailureReason; error?: string; retryAfterSeconds?: number },
  ) {
    return this.deps.rangeFailures.fail(
      this.deps.config,
      { queue: this.namespace, ...l, lease: inv.leaseView() },
      { ...f, lease: 'live' },
      Date.now(),
    );
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
      const entries = await segments.get(this.namespace, shard, range.segment);
      // Written before its ranges and read consistently: missing, the batch is left to the retry.
      if (!entries) throw new Error(`the segment of range ${range.start} cannot be read`);
      return entries
        .slice(range.segment.offset, range.segment.offset + range.count)
        .flatMap((e, index) =>
          wanted.has(e.sequence) ? [{ sequence: e.sequence, envelope: e.envelope, range, index }] : [],
        );
    });
    return perRange.flat();
  }
}
