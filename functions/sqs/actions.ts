import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type * as z from 'zod/mini';
import {
  ackReceipts,
  extendLease,
  nackReceipt,
  produceMessages,
  receiveMessages,
} from '../api/queue-calls.js';
import { type ApiServices, onQueue, type QueueRequest } from '../api/route.js';
import { mapLimit } from '../core/async.js';
import { type Action, hasScope, type Principal } from '../core/auth.js';
import { isLeaseqError } from '../core/errors.js';
import type { RequestKind } from '../core/request-kinds.js';
import type { ProduceMessage } from '../wire/requests.js';
import { isSqsError, SqsError } from './errors.js';
import {
  checkBatch,
  invalid,
  QUEUE_ATTRIBUTE_NAMES,
  queueAttributes,
  queueDoesNotExist,
  queueOfUrl,
  queueUrl,
  sentView,
  toProduceMessage,
  toSqsMessage,
} from './mapping.js';
import {
  changeVisibilityBatchInput,
  changeVisibilityInput,
  deleteMessageBatchInput,
  deleteMessageInput,
  getQueueAttributesInput,
  getQueueUrlInput,
  listQueuesInput,
  purgeQueueInput,
  receiveMessageInput,
  type SendMessageBatchEntry,
  sendMessageBatchInput,
  sendMessageInput,
} from './schemas.js';

/**
 * The SQS actions, each on leaseq's own calls (api/queue-calls.ts) under the same scopes, quotas
 * and metrics as this API's routes: what an SQS client does is what a leaseq client does.
 */

export interface SqsCall {
  event: APIGatewayProxyEventV2;
  services: ApiServices;
  principal: Principal;
  /** The endpoint as the client called it, for queue URLs. */
  origin: string;
  bodyBytes: number;
  input: unknown;
  /** What the call counts as in the queue's usage (USAGE_KINDS). */
  kind: RequestKind;
}

/** The usage's kind of each action on a queue's messages; any other counts as `other`. */
export const USAGE_KINDS: Partial<Record<string, RequestKind>> = {
  SendMessage: 'produce',
  SendMessageBatch: 'produce',
  ReceiveMessage: 'receive',
  DeleteMessage: 'ack',
  DeleteMessageBatch: 'ack',
  ChangeMessageVisibility: 'extend',
  ChangeMessageVisibilityBatch: 'extend',
};

type Handler = (call: SqsCall) => Promise<Record<string, unknown>>;

export const ACTIONS: Record<string, Handler> = {
  GetQueueUrl: async (call) => {
    const { QueueName } = parse(getQueueUrlInput, call.input);
    const { tenant } = call.services.config;
    if (!Object.hasOwn(tenant.queues, QueueName)) throw queueDoesNotExist(QueueName);
    if (!anyScope(call.principal, QueueName))
      throw new SqsError('AccessDenied', 403, `this key may not use queue ${JSON.stringify(QueueName)}`);
    return { QueueUrl: queueUrl(call.origin, tenant.tenant, QueueName) };
  },

  ListQueues: async (call) => {
    const { QueueNamePrefix, NextToken, MaxResults } = parse(listQueuesInput, call.input);
    const { tenant } = call.services.config;
    const after = NextToken ? Buffer.from(NextToken, 'base64url').toString('utf8') : '';
    const names = Object.keys(tenant.queues)
      .filter((q) => q.startsWith(QueueNamePrefix ?? '') && q > after && anyScope(call.principal, q))
      .sort();
    const page = names.slice(0, MaxResults ?? 1000);
    const more = MaxResults !== undefined && names.length > page.length;
    return {
      QueueUrls: page.map((q) => queueUrl(call.origin, tenant.tenant, q)),
      ...(more ? { NextToken: Buffer.from(page.at(-1) as string).toString('base64url') } : {}),
    };
  },

  GetQueueAttributes: async (call) => {
    const input = parse(getQueueAttributesInput, call.input);
    const names = input.AttributeNames ?? [];
    const unknown = names.find((n) => !QUEUE_ATTRIBUTE_NAMES.includes(n));
    if (unknown) throw new SqsError('InvalidAttributeName', 400, `Unknown Attribute ${unknown}.`);
    const name = queueOfUrl(input.QueueUrl, call.services.config.tenant.tenant);
    const action =
      (['consume', 'produce', 'admin'] as const).find((a) => hasScope(call.principal, a, name)) ?? 'consume';
    return onQueue(call, name, action, call.bodyBytes, async (req) => {
      const counts = names.some((n) => n === 'All' || n.startsWith('Approximate'));
      const stats = counts ? await req.services.stats.queue(name, req.queue.config) : undefined;
      const all = queueAttributes(queueArn(req), req.queue.config, stats);
      const picked = Object.entries(all).filter(([n]) => names.includes('All') || names.includes(n));
      return { Attributes: Object.fromEntries(picked) };
    });
  },

  SendMessage: async (call) => {
    const { QueueUrl, ...message } = parse(sendMessageInput, call.input);
    return onQueueOf(call, QueueUrl, 'produce', async (req) => {
      const [result] = await produceMessages(req, [toProduceMessage(message, req.queue.config)]);
      if (!result || result.status === 'failed') throw produceFailure(result?.error);
      return sentView(result.message_id, message);
    });
  },

  SendMessageBatch: async (call) => {
    const { QueueUrl, Entries } = parse(sendMessageBatchInput, call.input);
    checkBatch(Entries);
    return onQueueOf(call, QueueUrl, 'produce', async (req) => {
      const mapped = Entries.map((entry) => attempt(() => toProduceMessage(entry, req.queue.config)));
      const valid = mapped.flatMap((m, i) => (isSqsError(m) ? [] : [{ i, message: m }]));
      const results = valid.length
        ? await produceMessages(
            req,
            valid.map((v) => v.message as ProduceMessage),
          )
        : [];
      const byEntry = new Map(valid.map((v, k) => [v.i, results[k]]));
      const Successful: Record<string, unknown>[] = [];
      const Failed: Record<string, unknown>[] = [];
      Entries.forEach((entry: SendMessageBatchEntry, i) => {
        const problem = mapped[i];
        const result = byEntry.get(i);
        if (isSqsError(problem)) Failed.push(failedEntry(entry.Id, problem));
        else if (!result || result.status === 'failed')
          Failed.push(failedEntry(entry.Id, produceFailure(result?.error)));
        else Successful.push({ Id: entry.Id, ...sentView(result.message_id, entry) });
      });
      return { Successful, Failed };
    });
  },

  ReceiveMessage: async (call) => {
    const input = parse(receiveMessageInput, call.input);
    return onQueueOf(call, input.QueueUrl, 'consume', async (req) => {
      // SQS takes 0 (visible again at once); a leaseq lease is at least a second.
      const lease = input.VisibilityTimeout === undefined ? undefined : Math.max(1, input.VisibilityTimeout);
      const messages = await receiveMessages(req, {
        max_messages: input.MaxNumberOfMessages ?? 1,
        wait_seconds: input.WaitTimeSeconds ?? 0,
        ...(lease !== undefined ? { lease_seconds: lease } : {}),
      });
      const leaseSeconds = lease ?? req.queue.config.lease_seconds;
      const systemNames = [...(input.AttributeNames ?? []), ...(input.MessageSystemAttributeNames ?? [])];
      return {
        Messages: messages.map((m) =>
          toSqsMessage(m, leaseSeconds, {
            systemNames,
            ...(input.MessageAttributeNames ? { attributeNames: input.MessageAttributeNames } : {}),
          }),
        ),
      };
    });
  },

  DeleteMessage: async (call) => {
    const { QueueUrl, ReceiptHandle } = parse(deleteMessageInput, call.input);
    return onQueueOf(call, QueueUrl, 'consume', async (req) => {
      const [result] = await ackReceipts(req, [ReceiptHandle]);
      if (result?.status !== 'acked') throw receiptProblem(result?.status);
      return {};
    });
  },

  DeleteMessageBatch: async (call) => {
    const { QueueUrl, Entries } = parse(deleteMessageBatchInput, call.input);
    checkBatch(Entries);
    return onQueueOf(call, QueueUrl, 'consume', async (req) => {
      const results = await ackReceipts(
        req,
        Entries.map((e) => e.ReceiptHandle),
      );
      const Successful: Record<string, unknown>[] = [];
      const Failed: Record<string, unknown>[] = [];
      Entries.forEach((entry, i) => {
        const status = results[i]?.status;
        if (status === 'acked') Successful.push({ Id: entry.Id });
        else Failed.push(failedEntry(entry.Id, receiptProblem(status)));
      });
      return { Successful, Failed };
    });
  },

  ChangeMessageVisibility: async (call) => {
    const { QueueUrl, ReceiptHandle, VisibilityTimeout } = parse(changeVisibilityInput, call.input);
    return onQueueOf(call, QueueUrl, 'consume', async (req) => {
      await changeVisibility(req, ReceiptHandle, VisibilityTimeout);
      return {};
    });
  },

  ChangeMessageVisibilityBatch: async (call) => {
    const { QueueUrl, Entries } = parse(changeVisibilityBatchInput, call.input);
    checkBatch(Entries);
    return onQueueOf(call, QueueUrl, 'consume', async (req) => {
      const outcomes = await mapLimit(Entries, 4, async (entry) => {
        try {
          await changeVisibility(req, entry.ReceiptHandle, entry.VisibilityTimeout);
          return undefined;
        } catch (err) {
          if (isSqsError(err)) return err;
          throw err;
        }
      });
      return {
        Successful: Entries.flatMap((e, i) => (outcomes[i] ? [] : [{ Id: e.Id }])),
        Failed: Entries.flatMap((e, i) => {
          const problem = outcomes[i];
          return problem ? [failedEntry(e.Id, problem)] : [];
        }),
      };
    });
  },

  PurgeQueue: async (call) => {
    const { QueueUrl } = parse(purgeQueueInput, call.input);
    return onQueueOf(call, QueueUrl, 'admin', async (req) => {
      await req.services.queueAdmin.purge(req.queue.name, req.queue.config, req.principal.name);
      return {};
    });
  },
};

/**
 * A visibility change: a new lease from now (clamped to the queue's max total lease), or 0: the
 * delivery failed (a nack: an attempt used, the retry after the queue's backoff tier, the DLQ
 * after `max_attempts`), as SQS counts every receive toward `maxReceiveCount`. A consumer that
 * gives messages back on errors (sqs-consumer's `terminateVisibilityTimeout`) thus reaches the DLQ.
 */
async function changeVisibility(req: QueueRequest, receipt: string, seconds: number): Promise<void> {
  try {
    if (seconds === 0)
      await nackReceipt(req, {
        receipt,
        retryable: true,
        release: false,
        error: 'ChangeMessageVisibility to 0',
      });
    else await extendLease(req, { receipt, lease_seconds: seconds });
  } catch (err) {
    if (isLeaseqError(err) && (err.code === 'STALE_RECEIPT' || err.code === 'INVALID_REQUEST'))
      throw receiptProblem(err.code === 'STALE_RECEIPT' ? 'stale_receipt' : 'invalid_receipt');
    throw err;
  }
}

/** The queue a URL names, then onQueue: its scope, its quotas, the call. */
function onQueueOf<T>(
  call: SqsCall,
  url: string,
  action: Action,
  run: (req: QueueRequest) => Promise<T>,
): Promise<T> {
  const queue = queueOfUrl(url, call.services.config.tenant.tenant);
  return onQueue(call, queue, action, call.bodyBytes, run, call.kind);
}

function anyScope(principal: Principal, queue: string): boolean {
  return (['produce', 'consume', 'admin'] as const).some((a) => hasScope(principal, a, queue));
}

function queueArn(req: QueueRequest): string {
  const { tenant, region } = req.services.config;
  return `arn:leaseq:sqs:${region}:${tenant.tenant}:${req.queue.name}`;
}

/**
 * A receipt SQS would take and leaseq does not: one of an earlier delivery (its lease ran out;
 * the message may be with another consumer now). SQS deletes silently; leaseq says so, so a
 * consumer learns its handler outran its visibility timeout.
 */
function receiptProblem(status: string | undefined): SqsError {
  return new SqsError(
    'ReceiptHandleIsInvalid',
    404,
    status === 'stale_receipt'
      ? 'The receipt handle belongs to an earlier delivery of this message: its visibility timeout ran out, so it may be delivered again (leaseq refuses a stale receipt where SQS accepts it).'
      : 'The input receipt handle is invalid: it is not a receipt of this queue.',
  );
}

function produceFailure(error: { code: string; message: string; retryable: boolean } | undefined): SqsError {
  if (error && !error.retryable) return new SqsError('InvalidParameterValue', 400, error.message);
  return new SqsError(
    'ServiceUnavailable',
    503,
    error?.message ?? 'the message was not stored; send it again',
    false,
  );
}

function failedEntry(id: string, err: SqsError) {
  return { Id: id, SenderFault: err.sender, Code: err.code, Message: err.message };
}

function attempt<T>(f: () => T): T | SqsError {
  try {
    return f();
  } catch (err) {
    if (isSqsError(err)) return err;
    throw err;
  }
}

/** An input as its action's schema reads it: a missing member is MissingParameter, another problem InvalidParameterValue. */
function parse<S extends z.ZodMiniType>(schema: S, input: unknown): z.infer<S> {
  const result = schema.safeParse(input ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue?.path.join('.') || '(body)';
  const missing = issue?.code === 'invalid_type' && issue.input === undefined;
  if (missing)
    throw new SqsError('MissingParameter', 400, `The request must contain the parameter ${where}.`);
  throw invalid(where, issue?.message ?? 'invalid');
}
