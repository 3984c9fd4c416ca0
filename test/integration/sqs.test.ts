import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../functions/core/async.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { tampered } from '../helpers/tampered.js';

/**
 * The SQS-compatible endpoint with the real `@aws-sdk/client-sqs` (its signing, its MD5 checks,
 * its error parsing) against the local runtime: every action, batches with partial failures,
 * FIFO-style groups, stale receipts refused, bad signatures and scopes refused.
 */

let t: TestRuntime;
let sqs: SQSClient;
let url: (queue: string) => string;

interface Credentials {
  access_key_id: string;
  secret_access_key: string;
}

/** An API key with SQS credentials, made through leaseq's own API. */
async function credentialsFor(name: string, scopes: string[]): Promise<Credentials> {
  const res = await t.api('/keys', { body: { name, scopes, sqs_credentials: true } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.sqs_credentials;
}

function client(c: Credentials, options: { maxAttempts?: number } = {}): SQSClient {
  return new SQSClient({
    endpoint: t.runtime.url,
    region: 'us-east-1',
    credentials: { accessKeyId: c.access_key_id, secretAccessKey: c.secret_access_key },
    maxAttempts: options.maxAttempts ?? 1,
  });
}

/** The error a call fails with (its SDK name), or 'ok'. */
async function failure(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return 'ok';
  } catch (err) {
    return (err as Error).name;
  }
}

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'sqs',
    sqs_credentials: true,
    queues: {
      jobs: { shards: 2, lease_seconds: 30 },
      batch: { shards: 1 },
      groups: { shards: 2, ordered: true },
      keyed: { shards: 1, ordered: true, max_per_key: 5, backoff_seconds: [0] },
      visibility: { shards: 1, lease_seconds: 30, backoff_seconds: [0], max_attempts: 10 },
      purge: { shards: 1 },
      limited: { shards: 1, rate_limits: { produce: { requests_per_sec: 1 } } },
      events: {
        shards: 1,
        consumers: [{ name: 'billing', entry: 'test/fixtures/consumer-operations.ts', handler: 'billing' }],
      },
    },
  });
  sqs = client(await credentialsFor('sqs-admin', ['produce:*', 'consume:*', 'admin:*']));
  url = (queue) => `${t.runtime.url}/sqs/${queue}`;
});
afterAll(async () => {
  sqs?.destroy();
  await t?.close();
});

describe('queues', () => {
  it('have URLs of the endpoint, the tenant and the queue, listed by the scopes of the key', async () => {
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: 'jobs' }));
    expect(QueueUrl).toBe(url('jobs'));
    const listed = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: 'b' }));
    expect(listed.QueueUrls).toEqual([url('batch')]);
    const first = await sqs.send(new ListQueuesCommand({ MaxResults: 2 }));
    expect(first.QueueUrls).toEqual([url('batch'), url('events')]);
    const next = await sqs.send(new ListQueuesCommand({ MaxResults: 2, NextToken: first.NextToken }));
    expect(next.QueueUrls).toEqual([url('groups'), url('jobs')]);
    expect(await failure(sqs.send(new GetQueueUrlCommand({ QueueName: 'nope' })))).toBe('QueueDoesNotExist');
    expect(
      await failure(
        sqs.send(new SendMessageCommand({ QueueUrl: `${t.runtime.url}/other/jobs`, MessageBody: 'x' })),
      ),
    ).toBe('QueueDoesNotExist');
    const narrow = client(await credentialsFor('jobs-only', ['consume:jobs']));
    expect((await narrow.send(new ListQueuesCommand({}))).QueueUrls).toEqual([url('jobs')]);
    narrow.destroy();
  });

  it('answer their attributes: counts, visibility, retention, redrive, FIFO', async () => {
    await sqs.send(new SendMessageCommand({ QueueUrl: url('batch'), MessageBody: 'counted' }));
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url('batch'), AttributeNames: ['All'] }),
    );
    expect(Attributes).toMatchObject({
      ApproximateNumberOfMessages: expect.stringMatching(/^[1-9]/),
      ApproximateNumberOfMessagesNotVisible: '0',
      VisibilityTimeout: String(t.runtime.config.tenant.queues.batch?.lease_seconds),
      MessageRetentionPeriod: String(24 * 3600), // the default retention
      RedrivePolicy: expect.stringContaining('"maxReceiveCount":5'),
    });
    const fifo = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url('groups'), AttributeNames: ['FifoQueue', 'QueueArn'] }),
    );
    expect(fifo.Attributes).toEqual({ FifoQueue: 'true', QueueArn: 'arn:leaseq:sqs:us-east-1:sqs:groups' });
    expect(
      await failure(
        sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: url('jobs'), AttributeNames: ['Colour' as 'All'] }),
        ),
      ),
    ).toBe('InvalidAttributeName');
    expect(
      await failure(
        sqs.send(new SendMessageCommand({ QueueUrl: url('jobs'), MessageBody: 'bad \u0000 char' })),
      ),
    ).toBe('InvalidMessageContents');
    await drain('batch');
  });
});

/** Receives and deletes everything the queue delivers within a second. */
async function drain(queue: string): Promise<void> {
  for (;;) {
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url(queue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    if (!Messages?.length) return;
    for (const m of Messages)
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url(queue), ReceiptHandle: m.ReceiptHandle }));
  }
}

describe('messages', () => {
  it('go round: sent with attributes, received with them and their MD5s, deleted', async () => {
    const sent = await sqs.send(
      new SendMessageCommand({
        QueueUrl: url('jobs'),
        MessageBody: 'héllo, wörld',
        MessageAttributes: {
          kind: { DataType: 'String', StringValue: 'greeting' },
          count: { DataType: 'Number', StringValue: '3' },
          blob: { DataType: 'Binary', BinaryValue: new Uint8Array([1, 2, 3, 250]) },
        },
        MessageSystemAttributes: {
          AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-5759e988-bd862e3fe1be46a994272793' },
        },
      }),
    );
    expect(sent.MessageId).toMatch(/\S/);
    expect(sent.MD5OfMessageAttributes).toMatch(/^[0-9a-f]{32}$/);
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url('jobs'),
        WaitTimeSeconds: 5,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
      }),
    );
    const [m] = Messages ?? [];
    expect(m).toMatchObject({
      MessageId: sent.MessageId,
      Body: 'héllo, wörld',
      MD5OfBody: sent.MD5OfMessageBody,
      MD5OfMessageAttributes: sent.MD5OfMessageAttributes,
      Attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: expect.stringMatching(/^\d{13}$/),
        ApproximateFirstReceiveTimestamp: expect.stringMatching(/^\d{13}$/),
        AWSTraceHeader: 'Root=1-5759e988-bd862e3fe1be46a994272793',
      },
    });
    expect(m?.MessageAttributes?.kind).toEqual({ DataType: 'String', StringValue: 'greeting' });
    expect(m?.MessageAttributes?.count).toEqual({ DataType: 'Number', StringValue: '3' });
    expect([...(m?.MessageAttributes?.blob?.BinaryValue ?? [])]).toEqual([1, 2, 3, 250]);
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url('jobs'), ReceiptHandle: m?.ReceiptHandle }));
    // Deleted means acked: leaseq's own stats say so.
    expect((await queueApi(t, 'jobs').stats()).acked_total).toBe(1);
  });

  it('is one message per deduplication id, and a leaseq consumer sees the body and attributes', async () => {
    for (let i = 0; i < 2; i++)
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: url('jobs'),
          MessageBody: '{"order":7}',
          MessageDeduplicationId: 'order-7',
          MessageAttributes: { kind: { DataType: 'String', StringValue: 'order' } },
        }),
      );
    const got = await queueApi(t, 'jobs').receiveAll(1, 5000);
    await sleep(300);
    got.push(...(await queueApi(t, 'jobs').receive({ max_messages: 10, wait_seconds: 1 })));
    expect(got.map((m) => m.message_id)).toEqual(['order-7']);
    expect(got[0]).toMatchObject({
      payload: '{"order":7}',
      attributes: { kind: { data_type: 'String', string_value: 'order' } },
    });
    await queueApi(t, 'jobs').ack(got.map((m) => m.receipt));
  });

  it('waits for DelaySeconds, and long polls with WaitTimeSeconds', async () => {
    const at = Date.now();
    await sqs.send(new SendMessageCommand({ QueueUrl: url('jobs'), MessageBody: 'later', DelaySeconds: 2 }));
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url('jobs'), WaitTimeSeconds: 10, MaxNumberOfMessages: 10 }),
    );
    expect(Messages?.map((m) => m.Body)).toEqual(['later']);
    expect(Date.now() - at).toBeGreaterThanOrEqual(1900);
    await sqs.send(
      new DeleteMessageCommand({ QueueUrl: url('jobs'), ReceiptHandle: Messages?.[0]?.ReceiptHandle }),
    );
  });
});

describe('batches', () => {
  it('send what is valid and name each entry that failed, with SQS batch errors for the whole', async () => {
    const out = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url('batch'),
        Entries: [
          { Id: 'a', MessageBody: 'one' },
          {
            Id: 'b',
            MessageBody: 'two',
            MessageAttributes: { n: { DataType: 'Number', StringValue: 'not a number' } },
          },
          { Id: 'c', MessageBody: 'three' },
        ],
      }),
    );
    expect(out.Successful?.map((s) => s.Id).sort()).toEqual(['a', 'c']);
    expect(out.Failed).toEqual([
      {
        Id: 'b',
        SenderFault: true,
        Code: 'InvalidParameterValue',
        Message: expect.stringContaining('Number'),
      },
    ]);
    const send = (Entries: { Id: string; MessageBody: string }[]) =>
      failure(sqs.send(new SendMessageBatchCommand({ QueueUrl: url('batch'), Entries })));
    expect(await send([])).toBe('EmptyBatchRequest');
    expect(await send(Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: 'x' })))).toBe(
      'TooManyEntriesInBatchRequest',
    );
    expect(
      await send([
        { Id: 'same', MessageBody: 'x' },
        { Id: 'same', MessageBody: 'y' },
      ]),
    ).toBe('BatchEntryIdsNotDistinct');
    expect(await send([{ Id: 'not ok!', MessageBody: 'x' }])).toBe('InvalidBatchEntryId');

    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url('batch'), MaxNumberOfMessages: 10, WaitTimeSeconds: 5 }),
    );
    expect(Messages.map((m) => m.Body).sort()).toEqual(['one', 'three']);
    const deleted = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url('batch'),
        Entries: [
          ...Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })),
          { Id: 'bogus', ReceiptHandle: 'not-a-receipt' },
        ],
      }),
    );
    expect(deleted.Successful?.map((s) => s.Id).sort()).toEqual(['d0', 'd1']);
    expect(deleted.Failed).toEqual([
      { Id: 'bogus', SenderFault: true, Code: 'ReceiptHandleIsInvalid', Message: expect.any(String) },
    ]);
  });
});

describe('FIFO-style groups on an ordered queue', () => {
  it('require MessageGroupId and keep each group in order', async () => {
    expect(
      await failure(sqs.send(new SendMessageCommand({ QueueUrl: url('groups'), MessageBody: 'x' }))),
    ).toBe('MissingParameter');
    for (let i = 0; i < 5; i++)
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: url('groups'),
          Entries: ['g1', 'g2'].map((g) => ({
            Id: `${g}-${i}`,
            MessageBody: `${g}:${i}`,
            MessageGroupId: g,
          })),
        }),
      );
    const seen: string[] = [];
    const deadline = Date.now() + 20_000;
    while (seen.length < 10 && Date.now() < deadline) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: url('groups'),
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageSystemAttributeNames: ['MessageGroupId'],
        }),
      );
      for (const m of Messages) {
        expect(m.Body?.startsWith(`${m.Attributes?.MessageGroupId}:`)).toBe(true);
        seen.push(m.Body as string);
        await sqs.send(new DeleteMessageCommand({ QueueUrl: url('groups'), ReceiptHandle: m.ReceiptHandle }));
      }
    }
    for (const g of ['g1', 'g2'])
      expect(seen.filter((b) => b.startsWith(g))).toEqual([0, 1, 2, 3, 4].map((i) => `${g}:${i}`));
  }, 30_000);
});

describe('per-key batches on an ordered queue (max_per_key)', () => {
  it('receive several messages of a group in order, as SQS FIFO does, and nothing more of it until they are done', async () => {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url('keyed'),
        Entries: [
          ...[0, 1, 2, 3, 4, 5].map((i) => ({ Id: `a${i}`, MessageBody: `a:${i}`, MessageGroupId: 'a' })),
          ...[0, 1].map((i) => ({ Id: `b${i}`, MessageBody: `b:${i}`, MessageGroupId: 'b' })),
        ],
      }),
    );
    const receive = async () => {
      const got = [];
      const deadline = Date.now() + 5000;
      while (!got.length && Date.now() < deadline) {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url('keyed'),
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
          }),
        );
        got.push(...Messages);
      }
      return got;
    };
    const first = await receive();
    const bodies = (ms: typeof first, g: string) =>
      ms.map((m) => m.Body as string).filter((b) => b.startsWith(`${g}:`));
    expect(bodies(first, 'a')).toEqual(['a:0', 'a:1', 'a:2', 'a:3', 'a:4']);
    expect(bodies(first, 'b')).toEqual(['b:0', 'b:1']);
    const { Messages: none = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url('keyed'), MaxNumberOfMessages: 10 }),
    );
    expect(none).toEqual([]);
    for (const m of first)
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url('keyed'), ReceiptHandle: m.ReceiptHandle }));
    expect(bodies(await receive(), 'a')).toEqual(['a:5']);
  }, 30_000);
});

describe('visibility', () => {
  it('extends a lease, fails a delivery at 0 (an attempt, retried after its tier), and refuses a stale receipt', async () => {
    await sqs.send(new SendMessageCommand({ QueueUrl: url('visibility'), MessageBody: 'v' }));
    const receive = async (extra: { VisibilityTimeout?: number } = {}) =>
      (
        await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url('visibility'),
            WaitTimeSeconds: 5,
            MessageSystemAttributeNames: ['ApproximateReceiveCount'],
            ...extra,
          }),
        )
      ).Messages?.[0];
    const first = await receive();
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url('visibility'),
        ReceiptHandle: first?.ReceiptHandle,
        VisibilityTimeout: 60,
      }),
    );
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url('visibility'),
        ReceiptHandle: first?.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const second = await receive({ VisibilityTimeout: 1 });
    expect(second?.Attributes?.ApproximateReceiveCount).toBe('2');
    expect(
      await failure(
        sqs.send(
          new DeleteMessageCommand({ QueueUrl: url('visibility'), ReceiptHandle: first?.ReceiptHandle }),
        ),
      ),
    ).toBe('ReceiptHandleIsInvalid');
    // Its visibility runs out: it comes again, and the late receipt is refused, not taken silently.
    await sleep(1500);
    const third = await receive();
    expect(third?.Attributes?.ApproximateReceiveCount).toBe('3');
    expect(
      await failure(
        sqs.send(
          new DeleteMessageCommand({ QueueUrl: url('visibility'), ReceiptHandle: second?.ReceiptHandle }),
        ),
      ),
    ).toBe('ReceiptHandleIsInvalid');
    const batch = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url('visibility'),
        Entries: [
          { Id: 'live', ReceiptHandle: third?.ReceiptHandle, VisibilityTimeout: 30 },
          { Id: 'late', ReceiptHandle: second?.ReceiptHandle, VisibilityTimeout: 30 },
        ],
      }),
    );
    expect(batch.Successful).toEqual([{ Id: 'live' }]);
    expect(batch.Failed).toEqual([
      { Id: 'late', SenderFault: true, Code: 'ReceiptHandleIsInvalid', Message: expect.any(String) },
    ]);
    await sqs.send(
      new DeleteMessageCommand({ QueueUrl: url('visibility'), ReceiptHandle: third?.ReceiptHandle }),
    );
  }, 30_000);
});

describe('PurgeQueue', () => {
  it('empties a pull queue for an admin key, and refuses others', async () => {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url('purge'),
        Entries: Array.from({ length: 5 }, (_, i) => ({ Id: `p${i}`, MessageBody: `p${i}` })),
      }),
    );
    const worker = client(await credentialsFor('purge-worker', ['produce:purge', 'consume:purge']));
    expect(await failure(worker.send(new PurgeQueueCommand({ QueueUrl: url('purge') })))).toBe(
      'AccessDenied',
    );
    await sqs.send(new PurgeQueueCommand({ QueueUrl: url('purge') }));
    await sleep(1100);
    await sqs.send(new SendMessageCommand({ QueueUrl: url('purge'), MessageBody: 'after' }));
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url('purge'), MaxNumberOfMessages: 10, WaitTimeSeconds: 2 }),
    );
    expect(Messages.map((m) => m.Body)).toEqual(['after']);
    expect(await failure(sqs.send(new PurgeQueueCommand({ QueueUrl: url('events') })))).toBe(
      'InvalidParameterValue',
    );
    const audit = (await t.api('/queues/purge/audit')).body.entries;
    expect(audit[0]).toMatchObject({ action: 'purge_queue', actor: 'sqs-admin' });
    worker.destroy();
  });
});

describe('authentication and scopes', () => {
  it('refuses unsigned, unknown, badly signed and out-of-scope requests in SQS terms', async () => {
    const unsigned = await fetch(`${t.runtime.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.ListQueues' },
      body: '{}',
    });
    expect(unsigned.status).toBe(403);
    expect(await unsigned.json()).toMatchObject({ __type: 'com.amazonaws.sqs#MissingAuthenticationToken' });
    const creds = await credentialsFor('signer', ['consume:jobs']);
    const unknown = client({ ...creds, access_key_id: 'LQIAUNKNOWNKEY000000' });
    expect(await failure(unknown.send(new ListQueuesCommand({})))).toBe('InvalidClientTokenId');
    const wrong = client({ ...creds, secret_access_key: tampered(creds.secret_access_key) });
    expect(await failure(wrong.send(new ListQueuesCommand({})))).toBe('SignatureDoesNotMatch');
    const scoped = client(creds);
    expect(
      await failure(scoped.send(new SendMessageCommand({ QueueUrl: url('jobs'), MessageBody: 'no' }))),
    ).toBe('AccessDenied');
    expect(await failure(scoped.send(new ReceiveMessageCommand({ QueueUrl: url('jobs') })))).toBe('ok');
    for (const c of [unknown, wrong, scoped]) c.destroy();
  });

  it('answers RequestThrottled over a quota, which the SDK retries', async () => {
    const fast = client(await credentialsFor('fast', ['produce:limited']));
    const outcomes = [];
    for (let i = 0; i < 3; i++)
      outcomes.push(
        await failure(fast.send(new SendMessageCommand({ QueueUrl: url('limited'), MessageBody: `${i}` }))),
      );
    expect(outcomes).toContain('RequestThrottled');
    const patient = client(await credentialsFor('patient', ['produce:limited']), { maxAttempts: 5 });
    expect(
      await failure(
        patient.send(new SendMessageCommand({ QueueUrl: url('limited'), MessageBody: 'retried' })),
      ),
    ).toBe('ok');
    fast.destroy();
    patient.destroy();
  });
});

const ACTIONS = [
  'GetQueueUrl',
  'ListQueues',
  'GetQueueAttributes',
  'SendMessage',
  'SendMessageBatch',
  'ReceiveMessage',
  'DeleteMessage',
  'DeleteMessageBatch',
  'ChangeMessageVisibility',
  'ChangeMessageVisibilityBatch',
  'PurgeQueue',
  'CreateQueue',
];

const hostile = fc.oneof(
  fc.string(),
  fc.constantFrom('__proto__', 'constructor', '#pk', ':v', '\u0000', '\uD800', 'x'.repeat(5000), 'All', '.*'),
);
const anyValue = fc.oneof(fc.jsonValue(), hostile, fc.integer(), fc.double());
const sqsInput = fc.oneof(
  fc.dictionary(hostile, fc.jsonValue()),
  fc.record(
    {
      QueueUrl: fc.oneof(
        fc.constantFrom('jobs', 'groups', 'nope').map((q) => `http://h/sqs/${q}`),
        hostile,
      ),
      QueueName: anyValue,
      MessageBody: anyValue,
      DelaySeconds: anyValue,
      MessageGroupId: anyValue,
      MessageDeduplicationId: anyValue,
      MessageAttributes: fc.oneof(fc.dictionary(hostile, fc.dictionary(hostile, anyValue)), anyValue),
      ReceiptHandle: anyValue,
      VisibilityTimeout: anyValue,
      MaxNumberOfMessages: anyValue,
      WaitTimeSeconds: fc.constantFrom(0, -1, 21, 'x'),
      AttributeNames: fc.oneof(fc.array(hostile, { maxLength: 3 }), anyValue),
      Entries: fc.oneof(
        fc.array(
          fc.dictionary(fc.constantFrom('Id', 'MessageBody', 'ReceiptHandle', 'VisibilityTimeout'), anyValue),
          { maxLength: 12 },
        ),
        anyValue,
      ),
    },
    { requiredKeys: [] },
  ),
);

describe('fuzz', () => {
  it('never answers 5xx to a signed request, whatever its action and body', async () => {
    let body = '';
    let target = '';
    const statuses = new Set<number>();
    const fuzzed = client(await credentialsFor('fuzz', ['produce:*', 'consume:*', 'admin:*']));
    // The SDK signs what this middleware puts in place of the command's own request.
    fuzzed.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { body: string; headers: Record<string, string> };
        request.body = body;
        request.headers['x-amz-target'] = target;
        request.headers['content-length'] = String(Buffer.byteLength(body));
        return next(args);
      },
      { step: 'build', name: 'fuzzBody' },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ACTIONS),
        fc.oneof(
          sqsInput.map((v) => JSON.stringify(v)),
          fc.string(),
        ),
        async (action, text) => {
          body = text;
          target = `AmazonSQS.${action}`;
          let status = 200;
          try {
            await fuzzed.send(new ListQueuesCommand({}));
          } catch (err) {
            status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? 0;
          }
          statuses.add(status);
          expect(status, `${action} ${text.slice(0, 200)}`).toBeGreaterThan(0);
          expect(status, `${action} ${text.slice(0, 200)}`).toBeLessThan(500);
        },
      ),
      // One input each that must succeed and must be refused, whatever the random ones are.
      {
        numRuns: 150,
        examples: [
          ['ListQueues', '{}'],
          ['GetQueueUrl', '{}'],
        ],
      },
    );
    // Signed well enough to reach the actions: some succeed, the rest are refused as input.
    expect(statuses).toContain(200);
    expect(statuses).toContain(400);
    expect(statuses).not.toContain(403);
    fuzzed.destroy();
  }, 120_000);
});
