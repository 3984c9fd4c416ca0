import { createHash } from 'node:crypto';
import type { QueueConfig } from '../core/config.js';
import { ATTRIBUTE_NAME, MESSAGE_ID, type MessageAttributes } from '../core/envelope.js';
import type { ProduceMessage } from '../wire/requests.js';
import type { DeliveredMessage } from '../wire/responses.js';
import { SqsError } from './errors.js';
import { md5OfAttributes, md5OfBody } from './md5.js';
import { BATCH_ENTRY_ID, MAX_BATCH, type SendMessageInput, type SqsAttributeValues } from './schemas.js';

/**
 * SQS's shapes to leaseq's and back (the README's "Use your SQS clients" table): queue URLs,
 * messages, attributes, batches. Pure: the actions (actions.ts) call the services.
 */

/** A queue's URL: the endpoint the client called, then the tenant and the queue. */
export function queueUrl(origin: string, tenant: string, queue: string): string {
  return `${origin}/${encodeURIComponent(tenant)}/${encodeURIComponent(queue)}`;
}

/** The queue a URL names: its last two path segments, the tenant's and the queue's names. */
export function queueOfUrl(url: string, tenant: string): string {
  let path: string[];
  try {
    path = new URL(url).pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw new SqsError('InvalidAddress', 404, `the QueueUrl ${JSON.stringify(url)} is not a URL`);
  }
  const [owner, queue] = path.slice(-2);
  if (path.length < 2 || owner === undefined || queue === undefined)
    throw new SqsError(
      'InvalidAddress',
      404,
      `the QueueUrl ${JSON.stringify(url)} names no <tenant>/<queue>`,
    );
  if (owner !== tenant) throw queueDoesNotExist(queue);
  return queue;
}

export function queueDoesNotExist(queue: string): SqsError {
  return new SqsError(
    'QueueDoesNotExist',
    400,
    `The specified queue ${JSON.stringify(queue)} does not exist.`,
  );
}

/** Characters SQS allows in a message body (its documented XML character ranges). */
const BODY_CHARACTERS = /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u;
/** SQS's largest message (1 MiB); a larger payload is leaseq's to claim-check, not SQS's to carry. */
export const MAX_BODY_BYTES = 1_048_576;

/**
 * A message to produce: the body as a string payload, `MessageGroupId` as its key (required on
 * an ordered queue, as FIFO requires it), `MessageDeduplicationId` as its id (hashed into one
 * when it has characters a leaseq id may not), typed attributes, and `AWSTraceHeader` as a header.
 */
export function toProduceMessage(
  input: Omit<SendMessageInput, 'QueueUrl'>,
  config: QueueConfig,
): ProduceMessage {
  if (!BODY_CHARACTERS.test(input.MessageBody))
    throw new SqsError(
      'InvalidMessageContents',
      400,
      'The message contains characters outside the allowed set.',
    );
  if (Buffer.byteLength(input.MessageBody) > MAX_BODY_BYTES)
    throw invalid('MessageBody', `it is over ${MAX_BODY_BYTES} bytes`);
  if (config.ordered && input.MessageGroupId === undefined)
    throw new SqsError('MissingParameter', 400, 'The request must contain the parameter MessageGroupId.');
  const attributes = toAttributes(input.MessageAttributes);
  const trace = input.MessageSystemAttributes?.AWSTraceHeader?.StringValue;
  return {
    payload: input.MessageBody,
    delay_seconds: input.DelaySeconds ?? 0,
    ...(input.MessageDeduplicationId !== undefined
      ? { message_id: messageIdOf(input.MessageDeduplicationId) }
      : {}),
    ...(input.MessageGroupId !== undefined ? { key: input.MessageGroupId } : {}),
    ...(attributes ? { attributes } : {}),
    ...(trace !== undefined ? { headers: { [TRACE_HEADER]: trace } } : {}),
  };
}

/** Where `AWSTraceHeader` rides: a header, so leaseq's consumers see it too. */
const TRACE_HEADER = 'x-amzn-trace-id';

export function messageIdOf(deduplicationId: string): string {
  return MESSAGE_ID.test(deduplicationId)
    ? deduplicationId
    : `sqs-${createHash('sha256').update(deduplicationId).digest('hex').slice(0, 40)}`;
}

export function toAttributes(input: SqsAttributeValues | undefined): MessageAttributes | undefined {
  const names = Object.keys(input ?? {});
  if (!input || !names.length) return undefined;
  if (names.length > 10) throw invalid('MessageAttributes', 'a message has at most 10 attributes');
  const out: MessageAttributes = {};
  for (const name of names) {
    const a = input[name] as SqsAttributeValues[string];
    const where = `MessageAttribute ${name}`;
    if (!ATTRIBUTE_NAME.test(name)) throw invalid(where, 'its name is not a valid attribute name');
    if (!/^(String|Number|Binary)(\.[A-Za-z0-9_.-]+)?$/.test(a.DataType))
      throw invalid(where, 'its DataType is String, Number or Binary, with an optional .suffix');
    if (a.StringListValues?.length || a.BinaryListValues?.length)
      throw new SqsError(
        'UnsupportedOperation',
        400,
        `${where}: list values are not supported (SQS reserves them too)`,
      );
    if (a.DataType.startsWith('Binary')) {
      if (a.BinaryValue === undefined) throw invalid(where, 'a Binary attribute needs a BinaryValue');
      out[name] = { data_type: a.DataType, binary_value: a.BinaryValue };
    } else {
      if (a.StringValue === undefined) throw invalid(where, `a ${a.DataType} attribute needs a StringValue`);
      if (a.DataType.startsWith('Number') && !Number.isFinite(Number(a.StringValue)))
        throw invalid(where, 'a Number attribute holds a number');
      out[name] = { data_type: a.DataType, string_value: a.StringValue };
    }
  }
  return out;
}

/** The attributes `names` asks for: `All` or `.*`, a `prefix.*`, or exact names. */
export function selectAttributes(
  attributes: MessageAttributes | undefined,
  names: readonly string[] | undefined,
): MessageAttributes | undefined {
  if (!attributes || !names?.length) return undefined;
  const wanted = (name: string) =>
    names.some(
      (n) => n === 'All' || n === '.*' || n === name || (n.endsWith('.*') && name.startsWith(n.slice(0, -1))),
    );
  const picked = Object.fromEntries(Object.entries(attributes).filter(([name]) => wanted(name)));
  return Object.keys(picked).length ? picked : undefined;
}

function sqsAttributes(attributes: MessageAttributes) {
  return Object.fromEntries(
    Object.entries(attributes).map(([name, a]) => [
      name,
      {
        DataType: a.data_type,
        ...(a.string_value !== undefined ? { StringValue: a.string_value } : {}),
        ...(a.binary_value !== undefined ? { BinaryValue: a.binary_value } : {}),
      },
    ]),
  );
}

/** What SendMessage answers for a message that was accepted (or was a duplicate of one). */
export function sentView(messageId: string, input: Omit<SendMessageInput, 'QueueUrl'>) {
  const attributes = md5OfAttributes(toAttributes(input.MessageAttributes));
  const trace = input.MessageSystemAttributes?.AWSTraceHeader?.StringValue;
  const system =
    trace !== undefined
      ? md5OfAttributes({ AWSTraceHeader: { data_type: 'String', string_value: trace } })
      : undefined;
  return {
    MessageId: messageId,
    MD5OfMessageBody: md5OfBody(input.MessageBody),
    ...(attributes ? { MD5OfMessageAttributes: attributes } : {}),
    ...(system ? { MD5OfMessageSystemAttributes: system } : {}),
  };
}

const SYSTEM_ATTRIBUTES = [
  'ApproximateReceiveCount',
  'SentTimestamp',
  'ApproximateFirstReceiveTimestamp',
  'MessageGroupId',
  'AWSTraceHeader',
] as const;

/**
 * A delivery as SQS's ReceiveMessage shows it. `ApproximateReceiveCount` is the attempt: every
 * delivery but one given back by a worker stopping (leaseq's `release`) counts, as in SQS. leaseq
 * keeps no first receive time, so `ApproximateFirstReceiveTimestamp` is this delivery's.
 */
export function toSqsMessage(
  m: DeliveredMessage,
  leaseSeconds: number,
  request: { systemNames?: readonly string[]; attributeNames?: readonly string[] },
) {
  const body = typeof m.payload === 'string' ? m.payload : JSON.stringify(m.payload ?? null);
  const deliveredAt = Date.parse(m.lease_expires_at) - leaseSeconds * 1000;
  const system: Record<(typeof SYSTEM_ATTRIBUTES)[number], string | undefined> = {
    ApproximateReceiveCount: String(m.attempt),
    SentTimestamp: String(Date.parse(m.enqueued_at)),
    ApproximateFirstReceiveTimestamp: String(deliveredAt),
    MessageGroupId: m.key ?? undefined,
    AWSTraceHeader: m.headers[TRACE_HEADER],
  };
  const names = request.systemNames ?? [];
  const all = names.includes('All');
  const attributes = Object.fromEntries(
    SYSTEM_ATTRIBUTES.filter((n) => (all || names.includes(n)) && system[n] !== undefined).map((n) => [
      n,
      system[n],
    ]),
  );
  const picked = selectAttributes(m.attributes, request.attributeNames);
  return {
    MessageId: m.message_id,
    ReceiptHandle: m.receipt,
    MD5OfBody: md5OfBody(body),
    Body: body,
    ...(Object.keys(attributes).length ? { Attributes: attributes } : {}),
    ...(picked
      ? { MessageAttributes: sqsAttributes(picked), MD5OfMessageAttributes: md5OfAttributes(picked) }
      : {}),
  };
}

/** SQS's checks of a batch's entries, in its order: none, too many, a bad id, an id twice. */
export function checkBatch(entries: readonly { Id: string }[]): void {
  if (!entries.length)
    throw new SqsError('EmptyBatchRequest', 400, 'There should be at least one entry in the request.');
  if (entries.length > MAX_BATCH)
    throw new SqsError(
      'TooManyEntriesInBatchRequest',
      400,
      `Maximum number of entries per request are ${MAX_BATCH}. You have sent ${entries.length}.`,
    );
  const bad = entries.find((e) => !BATCH_ENTRY_ID.test(e.Id));
  if (bad)
    throw new SqsError(
      'InvalidBatchEntryId',
      400,
      `A batch entry id can only contain alphanumeric characters, hyphens and underscores, at most 80: ${JSON.stringify(bad.Id)}.`,
    );
  const seen = new Set<string>();
  for (const e of entries) {
    if (seen.has(e.Id)) throw new SqsError('BatchEntryIdsNotDistinct', 400, `Id ${e.Id} repeated.`);
    seen.add(e.Id);
  }
}

export function invalid(parameter: string, why: string): SqsError {
  return new SqsError(
    'InvalidParameterValue',
    400,
    `Value for parameter ${parameter} is invalid. Reason: ${why}.`,
  );
}

/** GetQueueAttributes: leaseq's queue as SQS names its attributes. */
export function queueAttributes(
  arn: string,
  config: QueueConfig,
  stats: { depth: number; in_flight: number; delayed: number } | undefined,
): Record<string, string> {
  return {
    QueueArn: arn,
    ...(stats
      ? {
          ApproximateNumberOfMessages: String(stats.depth),
          ApproximateNumberOfMessagesNotVisible: String(stats.in_flight),
          ApproximateNumberOfMessagesDelayed: String(stats.delayed),
        }
      : {}),
    VisibilityTimeout: String(config.lease_seconds),
    MessageRetentionPeriod: String(config.retention_hours * 3600),
    MaximumMessageSize: String(MAX_BODY_BYTES),
    DelaySeconds: '0',
    ReceiveMessageWaitTimeSeconds: '0',
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: `${arn}/dlq`,
      maxReceiveCount: config.max_attempts,
    }),
    ...(config.ordered ? { FifoQueue: 'true', ContentBasedDeduplication: 'false' } : {}),
  };
}

export const QUEUE_ATTRIBUTE_NAMES = [
  'All',
  'QueueArn',
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
  'VisibilityTimeout',
  'MessageRetentionPeriod',
  'MaximumMessageSize',
  'DelaySeconds',
  'ReceiveMessageWaitTimeSeconds',
  'RedrivePolicy',
  'FifoQueue',
  'ContentBasedDeduplication',
];
