import * as z from 'zod/mini';
import { intIn } from '../core/zod-mini.js';

/**
 * The SQS actions' inputs as the AWS JSON 1.0 protocol carries them (SQS's member names),
 * validated at the edge. Members a newer SDK may add are ignored, as SQS ignores them; what is
 * checked has SQS's limits. Types come from here. Each is built by its action's first request
 * (`z.lazy`, as the api's schemas are).
 */

export const MAX_BATCH = 10;
/** SQS's batch entry id: up to 80 of letters, digits, hyphen and underscore. */
export const BATCH_ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;

const queueUrl = z.string().check(z.minLength(1));
const receiptHandle = z.string().check(z.minLength(1), z.maxLength(2048));

const attributeValue = z.object({
  DataType: z.string().check(z.minLength(1), z.maxLength(256)),
  StringValue: z.optional(z.string()),
  BinaryValue: z.optional(z.string()),
  StringListValues: z.optional(z.array(z.string())),
  BinaryListValues: z.optional(z.array(z.string())),
});

export const messageAttributesInput = z.lazy(() => z.record(z.string(), attributeValue));
export type SqsAttributeValues = z.infer<typeof messageAttributesInput>;

const messageFields = {
  MessageBody: z.string().check(z.minLength(1, 'the message body must not be empty')),
  DelaySeconds: z.optional(intIn(0, 900)),
  MessageAttributes: z.optional(messageAttributesInput),
  MessageSystemAttributes: z.optional(messageAttributesInput),
  MessageDeduplicationId: z.optional(z.string().check(z.minLength(1), z.maxLength(128))),
  MessageGroupId: z.optional(z.string().check(z.minLength(1), z.maxLength(128))),
};

export const sendMessageInput = z.lazy(() => z.object({ QueueUrl: queueUrl, ...messageFields }));
export type SendMessageInput = z.infer<typeof sendMessageInput>;

const batch = <T extends z.ZodMiniType>(entry: T) =>
  z.object({ QueueUrl: queueUrl, Entries: z.array(entry) });

export const sendMessageBatchInput = z.lazy(() => batch(z.object({ Id: z.string(), ...messageFields })));
export type SendMessageBatchEntry = z.infer<typeof sendMessageBatchInput>['Entries'][number];

export const receiveMessageInput = z.lazy(() =>
  z.object({
    QueueUrl: queueUrl,
    AttributeNames: z.optional(z.array(z.string())),
    MessageSystemAttributeNames: z.optional(z.array(z.string())),
    MessageAttributeNames: z.optional(z.array(z.string())),
    MaxNumberOfMessages: z.optional(intIn(1, 10)),
    VisibilityTimeout: z.optional(intIn(0, 43_200)),
    WaitTimeSeconds: z.optional(intIn(0, 20)),
    ReceiveRequestAttemptId: z.optional(z.string().check(z.maxLength(128))),
  }),
);
export type ReceiveMessageInput = z.infer<typeof receiveMessageInput>;

export const deleteMessageInput = z.lazy(() =>
  z.object({ QueueUrl: queueUrl, ReceiptHandle: receiptHandle }),
);
export const deleteMessageBatchInput = z.lazy(() =>
  batch(z.object({ Id: z.string(), ReceiptHandle: receiptHandle })),
);

const visibility = intIn(0, 43_200);
export const changeVisibilityInput = z.lazy(() =>
  z.object({
    QueueUrl: queueUrl,
    ReceiptHandle: receiptHandle,
    VisibilityTimeout: visibility,
  }),
);
export const changeVisibilityBatchInput = z.lazy(() =>
  batch(z.object({ Id: z.string(), ReceiptHandle: receiptHandle, VisibilityTimeout: visibility })),
);

export const getQueueUrlInput = z.lazy(() =>
  z.object({
    QueueName: z.string().check(z.minLength(1), z.maxLength(80)),
    QueueOwnerAWSAccountId: z.optional(z.string()),
  }),
);
export const listQueuesInput = z.lazy(() =>
  z.object({
    QueueNamePrefix: z.optional(z.string().check(z.maxLength(80))),
    NextToken: z.optional(z.string().check(z.maxLength(1024))),
    MaxResults: z.optional(intIn(1, 1000)),
  }),
);
export const getQueueAttributesInput = z.lazy(() =>
  z.object({
    QueueUrl: queueUrl,
    AttributeNames: z.optional(z.array(z.string())),
  }),
);
export const purgeQueueInput = z.lazy(() => z.object({ QueueUrl: queueUrl }));
