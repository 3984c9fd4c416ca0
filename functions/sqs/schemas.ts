import * as z from 'zod';

/**
 * The SQS actions' inputs as the AWS JSON 1.0 protocol carries them (SQS's member names),
 * validated at the edge. Members a newer SDK may add are ignored, as SQS ignores them; what is
 * checked has SQS's limits. Types come from here.
 */

export const MAX_BATCH = 10;
/** SQS's batch entry id: up to 80 of letters, digits, hyphen and underscore. */
export const BATCH_ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;

const queueUrl = z.string().min(1);
const receiptHandle = z.string().min(1).max(2048);

const attributeValue = z.object({
  DataType: z.string().min(1).max(256),
  StringValue: z.string().optional(),
  BinaryValue: z.string().optional(),
  StringListValues: z.array(z.string()).optional(),
  BinaryListValues: z.array(z.string()).optional(),
});

export const messageAttributesInput = z.record(z.string(), attributeValue);
export type SqsAttributeValues = z.infer<typeof messageAttributesInput>;

const messageFields = {
  MessageBody: z.string().min(1, 'the message body must not be empty'),
  DelaySeconds: z.number().int().min(0).max(900).optional(),
  MessageAttributes: messageAttributesInput.optional(),
  MessageSystemAttributes: messageAttributesInput.optional(),
  MessageDeduplicationId: z.string().min(1).max(128).optional(),
  MessageGroupId: z.string().min(1).max(128).optional(),
};

export const sendMessageInput = z.object({ QueueUrl: queueUrl, ...messageFields });
export type SendMessageInput = z.infer<typeof sendMessageInput>;

const batch = <T extends z.ZodType>(entry: T) => z.object({ QueueUrl: queueUrl, Entries: z.array(entry) });

export const sendMessageBatchInput = batch(z.object({ Id: z.string(), ...messageFields }));
export type SendMessageBatchEntry = z.infer<typeof sendMessageBatchInput>['Entries'][number];

export const receiveMessageInput = z.object({
  QueueUrl: queueUrl,
  AttributeNames: z.array(z.string()).optional(),
  MessageSystemAttributeNames: z.array(z.string()).optional(),
  MessageAttributeNames: z.array(z.string()).optional(),
  MaxNumberOfMessages: z.number().int().min(1).max(10).optional(),
  VisibilityTimeout: z.number().int().min(0).max(43_200).optional(),
  WaitTimeSeconds: z.number().int().min(0).max(20).optional(),
  ReceiveRequestAttemptId: z.string().max(128).optional(),
});
export type ReceiveMessageInput = z.infer<typeof receiveMessageInput>;

export const deleteMessageInput = z.object({ QueueUrl: queueUrl, ReceiptHandle: receiptHandle });
export const deleteMessageBatchInput = batch(z.object({ Id: z.string(), ReceiptHandle: receiptHandle }));

const visibility = z.number().int().min(0).max(43_200);
export const changeVisibilityInput = z.object({
  QueueUrl: queueUrl,
  ReceiptHandle: receiptHandle,
  VisibilityTimeout: visibility,
});
export const changeVisibilityBatchInput = batch(
  z.object({ Id: z.string(), ReceiptHandle: receiptHandle, VisibilityTimeout: visibility }),
);

export const getQueueUrlInput = z.object({
  QueueName: z.string().min(1).max(80),
  QueueOwnerAWSAccountId: z.string().optional(),
});
export const listQueuesInput = z.object({
  QueueNamePrefix: z.string().max(80).optional(),
  NextToken: z.string().max(1024).optional(),
  MaxResults: z.number().int().min(1).max(1000).optional(),
});
export const getQueueAttributesInput = z.object({
  QueueUrl: queueUrl,
  AttributeNames: z.array(z.string()).optional(),
});
export const purgeQueueInput = z.object({ QueueUrl: queueUrl });
