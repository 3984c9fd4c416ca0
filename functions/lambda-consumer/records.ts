import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context, KinesisStreamEvent, KinesisStreamRecord } from 'aws-lambda';
import { decodeEnvelope, type Envelope, messageView } from '../core/envelope.js';
import { isNonRetryable, retryAfterOf } from './errors.js';

/** What a Lambda consumer's handler gets, and how it is called: the `leaseq/consumer` contract. */

export interface LeaseqMessage<T = unknown> {
  message_id: string;
  key: string | null;
  payload: T;
  headers: Record<string, string>;
  /** 1 on the first delivery. */
  attempt: number;
  /** When the producer's request accepted the message. */
  enqueued_at: string;
  /** The version of the queue's payload schema it was checked against, if the queue has one. */
  schema_ref?: string;
  /** The producer's W3C trace context, if it gave one. */
  traceparent?: string;
  /** Set on a replay's copy (POST /queues/{q}/replay): the replay's id. */
  replay_id?: string;
}

export type MessageHandler<T = unknown> = (message: LeaseqMessage<T>, context: Context) => unknown;

/** A record of the batch that is this consumer's to handle. */
export interface ConsumerRecord {
  record: KinesisStreamRecord;
  envelope: Envelope;
}

/** History items stay small; a pull nack's error has the same bound. */
const MAX_ERROR_CHARS = 4096;

/** A mapping on the wrong stream would fill this consumer's state with another queue's messages. */
export function assertStream(event: KinesisStreamEvent, stream: string): void {
  const arn = event.Records[0]?.eventSourceARN;
  if (arn !== undefined && !arn.endsWith(`/${stream}`)) {
    throw new Error(`the consumer of ${stream} received records of ${arn}`);
  }
}

/**
 * The batch's envelopes for `consumer`: every record but another consumer's retries. A record that
 * is not an envelope can never be delivered: it is logged and passed over.
 */
export function consumerRecords(
  records: readonly KinesisStreamRecord[],
  consumer: string,
  logger: Logger,
): ConsumerRecord[] {
  return records.flatMap((record) => {
    let envelope: Envelope;
    try {
      envelope = decodeEnvelope(Buffer.from(record.kinesis.data, 'base64'));
    } catch (err) {
      logger.error('skipping a record that is not a leaseq envelope', {
        sequenceNumber: record.kinesis.sequenceNumber,
        error: (err as Error).message,
      });
      return [];
    }
    return envelope.for !== undefined && envelope.for !== consumer ? [] : [{ record, envelope }];
  });
}

/** How a handler's throw is recorded: as a pull nack (retryable unless it says it is not). */
export function handlerFailure(err: unknown): {
  reason: 'nack' | 'non_retryable';
  error: string;
  retryAfterSeconds?: number;
} {
  const retryAfterSeconds = retryAfterOf(err);
  return {
    reason: isNonRetryable(err) ? 'non_retryable' : 'nack',
    error: (err instanceof Error ? err.message : String(err)).slice(0, MAX_ERROR_CHARS),
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
  };
}

/** The handler's view of an envelope whose payload has been read. */
export function messageOf(envelope: Envelope, payload: unknown, attempt: number): LeaseqMessage {
  return messageView(envelope, payload, attempt);
}
