/**
 * The bodies of leaseq's HTTP API (docs/contract.md), inferred from the schemas the server checks
 * and documents them with (functions/wire/), so the client cannot lack a field the server sends.
 * Types only: the client's JavaScript imports no zod (an optional peer of the package), and these
 * names are the client's, with the payload generic where a caller knows its type.
 */

import type {
  ConsumerQuery,
  CreateKeyRequestInput,
  DlqListQuery,
  NackRequestInput,
  ProduceMessageInput,
  ReceiveRequestInput,
  RedriveRequestInput,
  ReplayRequestInput,
  RetentionRequestInput,
  UsageQuery,
} from '../functions/wire/requests.js';
import type * as wire from '../functions/wire/responses.js';

export type {
  AckResult,
  AckStatus,
  AlarmsResponse,
  ApiKeyInfo,
  AuditEntry,
  ConsumerStats,
  CreatedKey,
  DeadLetterGroup,
  DeadLetterGroups,
  ErrorBody,
  ExtendResult,
  FailedAttempt,
  JobStatus,
  MessageTrace,
  NackResult,
  ParkedKey,
  ProduceResult,
  ProduceStatus,
  QueueAction,
  QueueInfo,
  QueuePause,
  QueueStats,
  QueueUsage,
  Redrive,
  Replay,
  Retention,
  SkipResult,
  SqsCredentials,
  TraceEvent,
  TraceState,
  UsageResponse,
} from '../functions/wire/responses.js';

/** `M` with its payload typed `T`, every other field as the wire has it. */
type WithPayload<M, T> = { [K in keyof M]: K extends 'payload' ? T : M[K] };

/** A message to produce; the client assigns a ULID as `message_id` when absent. */
export type ProduceMessage<T = unknown> = WithPayload<ProduceMessageInput, T>;

export type ReceiveOptions = ReceiveRequestInput;

export type ReceivedMessage<T = unknown> = WithPayload<wire.DeliveredMessage, T>;

/** A nack's options beside its receipt. */
export type NackOptions = Omit<NackRequestInput, 'receipt'>;

export type DeadLetter<T = unknown> = WithPayload<wire.DeadLetter, T>;

export interface DlqPage<T = unknown> extends Omit<wire.DlqPage, 'messages'> {
  messages: DeadLetter<T>[];
}

export type DlqListOptions = Partial<Pick<DlqListQuery, 'limit' | 'cursor'>>;

/** `?consumer=<name>`: the same tool on one of the queue's Lambda consumers' state. */
export type ConsumerScope = ConsumerQuery;

export type RedriveRequest = RedriveRequestInput;

export type RedriveFilter = NonNullable<RedriveRequest['filter']>;

export type ReplayRequest = ReplayRequestInput;

export type RetentionRequest = RetentionRequestInput;

export type CreateKeyRequest = CreateKeyRequestInput;

/** A usage range (ISO 8601 times or Dates, at most 93 days), and one queue or all the key may see. */
export type UsageRequest = Omit<UsageQuery, 'from' | 'to'> & { from: string | Date; to: string | Date };
