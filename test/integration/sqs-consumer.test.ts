import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Consumer } from 'sqs-consumer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../functions/core/async.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { until } from '../helpers/until.js';

/**
 * `sqs-consumer`, unchanged, against leaseq's SQS endpoint: messages through `handleMessage` in
 * batches of 4, failures retried with the queue's tiers into the DLQ with their history (read
 * through leaseq's own API), `handleMessageBatch`, a graceful stop, and a handler that outran its
 * visibility timeout told so (a stale receipt is an error) instead of looping.
 */

let t: TestRuntime;
let sqs: SQSClient;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'sqsc',
    sqs_credentials: true,
    queues: {
      work: { shards: 2, backoff_seconds: [0, 0], max_attempts: 3, lease_seconds: 10 },
      batches: { shards: 1 },
      slow: { shards: 1, lease_seconds: 1 },
    },
  });
  const res = await t.api('/keys', {
    body: { name: 'worker', scopes: ['produce:*', 'consume:*'], sqs_credentials: true },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const { access_key_id, secret_access_key } = res.body.sqs_credentials;
  sqs = new SQSClient({
    endpoint: t.runtime.url,
    region: 'us-east-1',
    credentials: { accessKeyId: access_key_id, secretAccessKey: secret_access_key },
  });
});
afterAll(async () => {
  sqs?.destroy();
  await t?.close();
});

const url = (queue: string) => `${t.runtime.url}/sqsc/${queue}`;

async function sendAll(queue: string, bodies: string[]): Promise<void> {
  for (let i = 0; i < bodies.length; i += 10)
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url(queue),
        Entries: bodies.slice(i, i + 10).map((MessageBody, k) => ({ Id: `m${i + k}`, MessageBody })),
      }),
    );
}

function stopped(consumer: Consumer): Promise<void> {
  return new Promise((resolve) => {
    consumer.once('stopped', () => resolve());
    consumer.stop();
  });
}

describe('sqs-consumer', () => {
  it('handles 200 messages 4 at a time, each healthy one once, the failing ones into the DLQ with their history', async () => {
    const poison = (n: number) => n % 25 === 0;
    await sendAll(
      'work',
      Array.from({ length: 200 }, (_, n) => JSON.stringify({ n })),
    );
    const handled = new Map<number, number>();
    const consumer = Consumer.create({
      queueUrl: url('work'),
      sqs,
      batchSize: 4,
      waitTimeSeconds: 1,
      terminateVisibilityTimeout: true,
      handleMessage: async (message) => {
        const { n } = JSON.parse(message.Body ?? '{}') as { n: number };
        handled.set(n, (handled.get(n) ?? 0) + 1);
        if (poison(n)) throw new Error(`cannot handle ${n}`);
        return message;
      },
    });
    const errors: string[] = [];
    consumer.on('error', (err) => errors.push(err.message));
    consumer.start();
    const healthy = Array.from({ length: 200 }, (_, n) => n).filter((n) => !poison(n));
    const dead = async () => (await queueApi(t, 'work').stats()).dlq_depth;
    await until(async () => healthy.every((n) => handled.has(n)) && (await dead()) === 8, 60_000);
    await stopped(consumer);
    expect(healthy.filter((n) => handled.get(n) !== 1)).toEqual([]);
    for (let n = 0; n < 200; n += 25) expect(handled.get(n)).toBe(3);
    // Through leaseq's own API: each dead letter with its three attempts.
    const dlq = (await t.api('/queues/work/dlq')).body.messages as { payload: string; attempts: unknown[] }[];
    expect(dlq.map((d) => (JSON.parse(d.payload) as { n: number }).n).sort((a, b) => a - b)).toEqual([
      0, 25, 50, 75, 100, 125, 150, 175,
    ]);
    for (const d of dlq) expect(d.attempts).toHaveLength(3);
    expect(errors).toEqual([]);
    const stats = await queueApi(t, 'work').stats();
    expect(stats).toMatchObject({ depth: 0, in_flight: 0, acked_total: 192 });
  }, 90_000);

  it('handles batches through handleMessageBatch, and stops gracefully, leaving later messages queued', async () => {
    await sendAll(
      'batches',
      Array.from({ length: 50 }, (_, n) => `b${n}`),
    );
    const seen: string[] = [];
    const consumer = Consumer.create({
      queueUrl: url('batches'),
      sqs,
      batchSize: 10,
      waitTimeSeconds: 1,
      // A graceful stop waits for the poll in progress and the messages it brought.
      pollingCompleteWaitTimeMs: 5000,
      handleMessageBatch: async (messages) => {
        seen.push(...messages.map((m) => m.Body as string));
        return messages;
      },
    });
    consumer.start();
    await until(() => seen.length >= 50, 30_000);
    await stopped(consumer);
    expect([...new Set(seen)].sort()).toEqual(Array.from({ length: 50 }, (_, n) => `b${n}`).sort());
    expect(seen).toHaveLength(50);
    await sqs.send(new SendMessageCommand({ QueueUrl: url('batches'), MessageBody: 'after the stop' }));
    await sleep(1500);
    expect(seen).toHaveLength(50);
    expect((await queueApi(t, 'batches').stats()).depth).toBe(1);
  }, 60_000);

  it('reports a handler that outran its visibility timeout as an error, without looping on it', async () => {
    await sqs.send(new SendMessageCommand({ QueueUrl: url('slow'), MessageBody: 'slow' }));
    const errors: { name: string; code?: string }[] = [];
    let calls = 0;
    const consumer = Consumer.create({
      queueUrl: url('slow'),
      sqs,
      batchSize: 1,
      waitTimeSeconds: 1,
      handleMessage: async (message) => {
        calls++;
        if (calls === 1) await sleep(1600);
        return message;
      },
    });
    consumer.on('error', (err) => errors.push({ name: err.name, code: (err as { code?: string }).code }));
    consumer.start();
    await until(() => errors.length > 0 && calls >= 2, 20_000);
    await sleep(500);
    await stopped(consumer);
    expect(errors[0]).toMatchObject({ name: 'SQSError', code: 'ReceiptHandleIsInvalid' });
    // Delivered again after the lease, handled in time the second time: no loop.
    expect(calls).toBe(2);
    expect((await queueApi(t, 'slow').stats()).acked_total).toBe(1);
  }, 30_000);
});
