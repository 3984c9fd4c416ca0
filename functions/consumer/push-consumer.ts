import type { Logger } from '@aws-lambda-powertools/logger';
import type {
  Context,
  KinesisStreamBatchResponse,
  KinesisStreamEvent,
  KinesisStreamRecord,
} from 'aws-lambda';
import type { ClaimStore } from '../claims/claims.js';
import type { Failures } from '../consume/failures.js';
import { mapLimit } from '../core/async.js';
import { consumerNamespace, type QueueConfig, streamName } from '../core/config.js';
import { decodeEnvelope, type Envelope } from '../core/envelope.js';
import { retentionTtls } from '../core/retention.js';
import { messagePk } from '../store/keys.js';
import type { LeaseTarget, MessageStore, NewLease, StateItem } from '../store/messages.js';
import { isNonRetryable } from './errors.js';

/**
 * One Lambda consumer of an unordered queue (DESIGN §2 "consumer middleware"): each record of
 * a batch is admitted into the consumer's own namespace of message state, leased for the rest
 * of the invocation, handed to the user's handler, then acked, or failed through the same path
 * as a pull nack (delay tier, then the DLQ with history). A failing message therefore never
 * blocks its shard: only an AWS call that fails after the SDK's retries fails a record.
 *
 * Not Powertools' BatchProcessor: it reports every record whose handler throws as a batch item
 * failure, has no cap on records in flight, and cannot stop before the deadline.
 */

export interface LeaseqMessage<T = unknown> {
  message_id: string;
  key: string | null;
  payload: T;
  headers: Record<string, string>;
  /** 1 on the first delivery. */
  attempt: number;
  /** When the producer's request accepted the message. */
  enqueued_at: string;
}

export type MessageHandler<T = unknown> = (message: LeaseqMessage<T>, context: Context) => unknown;

export interface PushConsumerDeps {
  tenant: string;
  queue: string;
  consumer: string;
  config: QueueConfig;
  messages: MessageStore;
  failures: Failures;
  claims: ClaimStore;
  logger: Logger;
  // biome-ignore lint/suspicious/noExplicitAny: the payload type is the user's; the envelope carries unknown.
  handler: MessageHandler<any>;
  /** Records handled at once. */
  concurrency: number;
  /** Below this much time left, no new record is started. */
  timeoutMarginMs: number;
}

/** History items stay small; a pull nack's error has the same bound. */
const MAX_ERROR_CHARS = 4096;

export class PushConsumer {
  private readonly namespace: string;
  private readonly stream: string;

  constructor(private readonly deps: PushConsumerDeps) {
    this.namespace = consumerNamespace(deps.queue, deps.consumer);
    this.stream = streamName(deps.tenant, deps.queue);
  }

  async handle(event: KinesisStreamEvent, context: Context): Promise<KinesisStreamBatchResponse> {
    const arn = event.Records[0]?.eventSourceARN;
    // A mapping on the wrong stream would fill this consumer's state with another queue's messages.
    if (arn !== undefined && !arn.endsWith(`/${this.stream}`)) {
      throw new Error(`the consumer of ${this.stream} received records of ${arn}`);
    }
    // A second copy of the same entry in one batch (a producer's crash-retry) is handled once.
    const seen = new Set<string>();
    let halted = false;
    const unfinished: string[] = [];
    await mapLimit(event.Records, this.deps.concurrency, async (record) => {
      const sequenceNumber = record.kinesis.sequenceNumber;
      // The event source retries from the lowest record reported, so a record not started is
      // just reported: it is not a failed attempt. After an AWS failure, the rest waits too.
      if (halted || context.getRemainingTimeInMillis() < this.deps.timeoutMarginMs) {
        unfinished.push(sequenceNumber);
        return;
      }
      try {
        await this.process(record, context, seen);
      } catch (err) {
        halted = true;
        unfinished.push(sequenceNumber);
        this.deps.logger.error('AWS call failed: the event source retries from this record', {
          sequenceNumber,
          error: (err as Error).message,
        });
      }
    });
    return { batchItemFailures: unfinished.map((itemIdentifier) => ({ itemIdentifier })) };
  }

  private async process(record: KinesisStreamRecord, context: Context, seen: Set<string>): Promise<void> {
    const envelope = this.decode(record);
    if (!envelope) return;
    if (envelope.for !== undefined && envelope.for !== this.deps.consumer) return;
    const copy = `${envelope.message_id}#${envelope.entry}`;
    if (seen.has(copy)) return;
    seen.add(copy);
    const item = await this.claim(record, envelope, context);
    if (item) await this.deliver(envelope, item, context);
  }

  /**
   * Admits the record into the namespace and leases it, or finds it already there: completed
   * or on the retry path (skipped), or left leased by an invocation that crashed (taken over).
   * Undefined when there is nothing to deliver now.
   */
  private async claim(
    record: KinesisStreamRecord,
    envelope: Envelope,
    context: Context,
  ): Promise<StateItem | undefined> {
    const { messages, config } = this.deps;
    const shard = record.eventID.split(':')[0] as string;
    const now = Date.now();
    const target: LeaseTarget = {
      pk: messagePk(this.namespace, envelope.message_id),
      queue: this.namespace,
      shard,
      message_id: envelope.message_id,
      entry: envelope.entry,
    };
    const lease: NewLease = {
      deliveredAt: now,
      // The invocation's own time: past it, the sweep counts a failed attempt, unless the event
      // source's retry of this record takes the lease over first.
      expiresAt: now + context.getRemainingTimeInMillis(),
      consumerId: `${this.deps.consumer}/${context.awsRequestId}`,
    };
    const { bodyTtl } = retentionTtls(config, now);
    const admitted = await messages.admit(
      shard,
      record.kinesis.sequenceNumber,
      { ...envelope, queue: this.namespace },
      now,
      bodyTtl,
    );
    if (admitted === 'admitted') return messages.lease(target, lease);
    // 'delayed': produced with a delay; the sweep puts it back into the stream when it is due.
    if (admitted !== 'duplicate') return undefined;
    const state = await messages.get(this.namespace, envelope.message_id);
    if (state?.entry !== envelope.entry) return undefined;
    if (state.state === 'ready') return messages.lease(target, lease);
    if (state.state === 'leased') return messages.relet(target, state.gen, lease);
    return undefined;
  }

  private async deliver(envelope: Envelope, item: StateItem, context: Context): Promise<void> {
    const message: LeaseqMessage = {
      message_id: envelope.message_id,
      key: envelope.key ?? null,
      // Outside the handler's try: a failed S3 read is the infrastructure's, not the message's.
      payload: await this.deps.claims.payloadOf(envelope),
      headers: envelope.headers ?? {},
      attempt: item.attempt,
      enqueued_at: envelope.produced_at,
    };
    try {
      await this.deps.handler(message, context);
    } catch (err) {
      await this.fail(item, err);
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
    if (outcome === 'stale') {
      this.deps.logger.warn('the lease ended before the ack: the message will be delivered again', {
        message_id: item.message_id,
        attempt: item.attempt,
      });
    }
  }

  /** Exactly a pull nack: history, then the delay tier or the DLQ. */
  private async fail(item: StateItem, err: unknown): Promise<void> {
    const error = (err instanceof Error ? err.message : String(err)).slice(0, MAX_ERROR_CHARS);
    const reason = isNonRetryable(err) ? 'non_retryable' : 'nack';
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
  }

  /** A record that is not an envelope can never be delivered: it is logged and passed over. */
  private decode(record: KinesisStreamRecord): Envelope | undefined {
    try {
      return decodeEnvelope(Buffer.from(record.kinesis.data, 'base64'));
    } catch (err) {
      this.deps.logger.error('skipping a record that is not a leaseq envelope', {
        sequenceNumber: record.kinesis.sequenceNumber,
        error: (err as Error).message,
      });
      return undefined;
    }
  }
}
