import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type {
  Context,
  KinesisStreamBatchResponse,
  KinesisStreamEvent,
  KinesisStreamRecord,
} from 'aws-lambda';
import type { ClaimStore } from '../claims/claims.js';
import type { Failures } from '../consume/failures.js';
import type { KeyOrder } from '../consume/key-order.js';
import { mapLimit } from '../core/async.js';
import { consumerNamespace, type QueueConfig, streamName } from '../core/config.js';
import type { Envelope } from '../core/envelope.js';
import { retentionTtls } from '../core/retention.js';
import type { Outcome } from '../core/retry-policy.js';
import { type CounterName, countFor } from '../observability/metrics.js';
import type { Counters } from '../store/counters.js';
import type { KeyState, KeyStates } from '../store/key-states.js';
import type { MessageStore, NewLease, StateItem } from '../store/messages.js';
import {
  assertStream,
  type ConsumerRecord,
  consumerRecords,
  handlerFailure,
  type MessageHandler,
  messageOf,
} from './records.js';

/**
 * One Lambda consumer of a queue (DESIGN §2 "consumer middleware"): each record of a batch is
 * admitted into the consumer's own namespace of message state, leased for the rest of the
 * invocation, handed to the user's handler, then acked, or failed through the same path as a
 * pull nack (delay tier, then the DLQ with history). A failing message therefore never blocks
 * its shard: only an AWS call that fails after the SDK's retries fails a record. On an ordered
 * queue a key's messages take its key in their order; one whose key is busy (a retry pending)
 * or parked (a dead letter) is held, not waited for, and goes back through the log once the key
 * is released.
 *
 * Not Powertools' BatchProcessor: it reports every record whose handler throws as a batch item
 * failure, has no cap on records in flight, and cannot stop before the deadline.
 */

export interface PushConsumerDeps {
  tenant: string;
  queue: string;
  consumer: string;
  config: QueueConfig;
  messages: MessageStore;
  failures: Failures;
  /** Its totals are written at the end of each invocation: the instance may be frozen after it. */
  counters: Pick<Counters, 'flush'>;
  keys: KeyStates;
  keyOrder: KeyOrder;
  claims: ClaimStore;
  logger: Logger;
  /** Per invocation, under the consumer's namespace: handled, redelivered, acked, nacked, dead-lettered. */
  metrics: Metrics;
  // biome-ignore lint/suspicious/noExplicitAny: the payload type is the user's; the envelope carries unknown.
  handler: MessageHandler<any>;
  /** Records handled at once. */
  concurrency: number;
  /** Below this much time left, no new record is started. */
  timeoutMarginMs: number;
}

type Entry = ConsumerRecord;

/** What one invocation knows of a key of an ordered queue while it runs the key's records. */
interface KeyRun {
  key: string;
  /** The key's last admitted message: the next new message's predecessor. */
  tail?: string;
  /** Acked here with the key released: its successor may go without reading the key again. */
  finished?: string;
  /** The key's state as the batch read it, until this invocation first changes it. */
  read?: KeyState;
}

export class PushConsumer {
  private readonly namespace: string;
  private readonly stream: string;

  constructor(private readonly deps: PushConsumerDeps) {
    this.namespace = consumerNamespace(deps.queue, deps.consumer);
    this.stream = streamName(deps.tenant, deps.queue);
  }

  async handle(event: KinesisStreamEvent, context: Context): Promise<KinesisStreamBatchResponse> {
    assertStream(event, this.stream);
    const entries = this.entries(event.Records);
    const ordered = this.deps.config.ordered;
    // On an ordered queue a key's records run one after another in log order; keys run side by side.
    const groups = ordered ? groupByKey(entries) : entries.map((e) => [e]);
    const keys = ordered
      ? await this.deps.keys.getMany(
          this.namespace,
          entries.flatMap((e) => (e.envelope.key === undefined ? [] : [e.envelope.key])),
        )
      : undefined;
    let halted = false;
    const unfinished: string[] = [];
    const counts: Partial<Record<CounterName, number>> = {};
    const count = (name: CounterName) => {
      counts[name] = (counts[name] ?? 0) + 1;
    };
    await mapLimit(groups, this.deps.concurrency, async (group) => {
      const key = group[0]?.envelope.key;
      const run: KeyRun | undefined =
        keys && key !== undefined
          ? { key, tail: keys.get(key)?.tail, read: keys.get(key) ?? { key } }
          : undefined;
      const startTail = run?.tail;
      try {
        for (const [i, entry] of group.entries()) {
          // The event source retries from the lowest record reported, so a record not started is
          // just reported: it is not a failed attempt. After an AWS failure, the rest waits too,
          // and so do the key's later records, which must not overtake it.
          if (halted || context.getRemainingTimeInMillis() < this.deps.timeoutMarginMs) {
            unfinished.push(...group.slice(i).map((e) => e.record.kinesis.sequenceNumber));
            return;
          }
          try {
            const item = await this.claim(entry, context, run);
            if (item) await this.deliver(entry.envelope, item, context, run, count);
          } catch (err) {
            halted = true;
            unfinished.push(...group.slice(i).map((e) => e.record.kinesis.sequenceNumber));
            this.deps.logger.error('AWS call failed: the event source retries from this record', {
              sequenceNumber: entry.record.kinesis.sequenceNumber,
              error: (err as Error).message,
            });
            return;
          }
        }
      } finally {
        if (run?.tail !== undefined && run.tail !== startTail) {
          await this.deps.keys.setTail(this.namespace, run.key, run.tail);
        }
      }
    });
    countFor(this.deps.metrics, this.namespace, counts);
    await this.deps.counters.flush();
    return { batchItemFailures: unfinished.map((itemIdentifier) => ({ itemIdentifier })) };
  }

  /** The batch's envelopes for this consumer; a second copy of one entry (a producer's crash-retry) once. */
  private entries(records: readonly KinesisStreamRecord[]): Entry[] {
    const seen = new Set<string>();
    return consumerRecords(records, this.deps.consumer, this.deps.logger).flatMap(({ record, envelope }) => {
      const copy = `${envelope.message_id}#${envelope.entry}`;
      if (seen.has(copy)) return [];
      seen.add(copy);
      return [{ record, envelope }];
    });
  }

  /**
   * Admits the record into the namespace and leases it, or finds it already there: completed
   * or on the retry path (skipped), or left leased by an invocation that crashed (taken over).
   * On an ordered queue a message that may not go yet is held until its key is released.
   * Undefined when there is nothing to deliver now.
   */
  private async claim(
    { record, envelope }: Entry,
    context: Context,
    run: KeyRun | undefined,
  ): Promise<StateItem | undefined> {
    const { messages, config } = this.deps;
    const shard = record.eventID.split(':')[0] as string;
    const now = Date.now();
    const lease: NewLease = {
      deliveredAt: now,
      // The invocation's own time: past it, the sweep counts a failed attempt, unless the event
      // source's retry of this record takes the lease over first.
      expiresAt: now + context.getRemainingTimeInMillis(),
      consumerId: `${this.deps.consumer}/${context.awsRequestId}`,
    };
    const { bodyTtl } = retentionTtls(config, now);
    const first = envelope.entry === 1;
    const prev = run && first ? run.tail : undefined;
    const admitted = await messages.admit(
      shard,
      record.kinesis.sequenceNumber,
      { ...envelope, queue: this.namespace },
      now,
      bodyTtl,
      prev === undefined ? {} : { prev },
    );
    // 'delayed': produced with a delay; the sweep puts it back into the stream when it is due.
    if (admitted.result === 'delayed') return undefined;
    let candidate = admitted.item;
    if (admitted.result === 'duplicate') {
      const state = await messages.get(this.namespace, envelope.message_id);
      if (state?.entry !== envelope.entry) return undefined;
      // A copy admitted by an invocation that ended before it moved the key's tail.
      if (run && first && state.prev === run.tail) run.tail = state.message_id;
      if (state.state === 'leased') return messages.relet(state, state.gen, lease);
      if (state.state !== 'ready') return undefined;
      candidate = state;
    } else if (run && first) {
      run.tail = envelope.message_id;
    }
    if (!candidate) return undefined;
    if (run && !(await this.takeKey(candidate, run))) {
      await this.deps.keyOrder.hold(this.namespace, candidate);
      return undefined;
    }
    return messages.lease(candidate, lease);
  }

  /** Whether the message may go now on an ordered queue, and its key taken for it if so. */
  private async takeKey(candidate: StateItem, run: KeyRun): Promise<boolean> {
    const { keyOrder } = this.deps;
    const afterFinished = run.finished !== undefined && candidate.prev === run.finished;
    // The batch's read serves the key's first record; after that this invocation has changed it.
    const known = run.read && new Map([[run.key, run.read]]);
    run.read = undefined;
    if (!afterFinished && !(await keyOrder.leasable(this.namespace, [candidate], known)).length) return false;
    return keyOrder.claim(this.namespace, candidate);
  }

  private async deliver(
    envelope: Envelope,
    item: StateItem,
    context: Context,
    run: KeyRun | undefined,
    count: (name: CounterName) => void,
  ): Promise<void> {
    // Outside the handler's try: a failed S3 read is the infrastructure's, not the message's.
    const message = messageOf(envelope, await this.deps.claims.payloadOf(envelope), item.attempt);
    count('received');
    if (item.attempt > 1) count('redelivered');
    try {
      await this.deps.handler(message, context);
    } catch (err) {
      const outcome = await this.fail(item, err);
      if (outcome) count('nacked');
      if (outcome?.kind === 'dead') count('dead_lettered');
      return;
    }
    const now = Date.now();
    const { tombstoneTtl } = retentionTtls(this.deps.config, now);
    const { outcome } = await this.deps.messages.ack(
      this.namespace,
      item.message_id,
      item.gen,
      now,
      tombstoneTtl,
    );
    if (outcome === 'acked') count('acked');
    if (outcome === 'acked' && run) {
      if (await this.deps.keyOrder.finished(this.namespace, run.key, item.message_id)) {
        run.finished = item.message_id;
      }
    }
    if (outcome === 'stale') {
      this.deps.logger.warn('the lease ended before the ack: the message will be delivered again', {
        message_id: item.message_id,
        attempt: item.attempt,
      });
    }
  }

  /** Exactly a pull nack: history, then the delay tier or the DLQ. */
  /** The outcome, or undefined when the lease had already ended (stale). */
  private async fail(item: StateItem, err: unknown): Promise<Outcome | undefined> {
    const { reason, error } = handlerFailure(err);
    const outcome = await this.deps.failures.fail(
      this.namespace,
      this.deps.config,
      item,
      { generation: item.gen, reason, error, deliveredAt: item.delivered_at ?? Date.now(), lease: 'live' },
      Date.now(),
    );
    this.deps.logger.warn('the handler failed', {
      message_id: item.message_id,
      attempt: item.attempt,
      reason,
      error,
      outcome: outcome?.kind ?? 'stale',
    });
    return outcome;
  }
}

/** Records of one key together, in log order; a record without a key on its own. */
function groupByKey(entries: readonly Entry[]): Entry[][] {
  const groups: Entry[][] = [];
  const byKey = new Map<string, Entry[]>();
  for (const entry of entries) {
    const key = entry.envelope.key;
    const group = key === undefined ? undefined : byKey.get(key);
    if (group) {
      group.push(entry);
      continue;
    }
    const fresh = [entry];
    groups.push(fresh);
    if (key !== undefined) byKey.set(key, fresh);
  }
  return groups;
}
