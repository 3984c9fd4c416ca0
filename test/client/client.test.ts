import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ForbiddenError,
  InvalidRequestError,
  isRetryable,
  LeaseqApiError,
  LeaseqNetworkError,
  MessageNotFoundError,
  NotFoundError,
  QueueNotFoundError,
  StaleReceiptError,
  UnauthenticatedError,
} from '../../client/index.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { clientOf, recordingFetch } from './support.js';

/** LeaseqClient against a real local runtime: produce retries, typed errors, every call. */

const PRODUCE_ONLY_KEY = 'client-test-produce-only-key';

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'client',
    queues: { jobs: { shards: 2 }, calls: { shards: 1 } },
    api_keys: [
      {
        name: 'producer',
        sha256: createHash('sha256').update(PRODUCE_ONLY_KEY).digest('hex'),
        scopes: ['produce:jobs'],
      },
    ],
  });
});
afterAll(async () => {
  await t?.close();
});

/** How many copies of each of `ids` the queue's stream holds. */
async function copiesInLog(ids: string[]): Promise<number[]> {
  const records = await t.records('jobs');
  return ids.map((id) => records.filter((r) => r.envelope.message_id === id).length);
}

describe('produce', () => {
  it('gives every message an id before the first try and resends only the failed ones, with the same ids', async () => {
    const messages = Array.from({ length: 6 }, (_, n) => ({ payload: { n } }));
    const failing = new Set([1, 4]);
    t.faults.recordFault = {
      failRecord: (entry) =>
        failing.has(JSON.parse(Buffer.from(entry.Data as Uint8Array).toString()).payload.n),
    };
    // Kinesis recovers once the first answer is in: the client's retry lands.
    const { fetch, exchanges } = recordingFetch(() => t.faults.clear());
    try {
      const results = await clientOf(t, { fetch, retryBaseMs: 10 }).produce('jobs', messages);

      expect(results.map((r) => r.status)).toEqual(Array(6).fill('accepted'));
      expect(exchanges.map((e) => e.status)).toEqual([200, 200]);
      const [first, retry] = exchanges;
      const sentIds = first?.body.messages.map((m: { message_id: string }) => m.message_id);
      expect(sentIds).toEqual(results.map((r) => r.message_id));
      expect(retry?.body.messages.map((m: { message_id: string }) => m.message_id)).toEqual([
        sentIds[1],
        sentIds[4],
      ]);
      expect(await copiesInLog(sentIds)).toEqual(Array(6).fill(1));
    } finally {
      t.faults.clear();
    }
  });

  it('retries a whole request answered 503 after its Retry-After, and producing the same objects again answers duplicate', async () => {
    const messages = [{ payload: 'a' }, { payload: 'b' }, { message_id: 'own-id-1', payload: 'c' }];
    t.faults.callFault = {
      match: (op) => op === 'DynamoDB.BatchGetItem',
      errorName: 'ThrottlingException',
      throttling: true,
    };
    const { fetch, exchanges } = recordingFetch(() => t.faults.clear());
    const client = clientOf(t, { fetch });
    try {
      const started = Date.now();
      const results = await client.produce('jobs', messages);
      expect(exchanges.map((e) => e.status)).toEqual([503, 200]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
      expect(results.map((r) => r.status)).toEqual(['accepted', 'accepted', 'accepted']);
      expect(results[2]?.message_id).toBe('own-id-1');
      // The throttled try and the retry carried the same ids.
      expect(exchanges[1]?.body).toEqual(exchanges[0]?.body);

      const again = await client.produce('jobs', messages);
      expect(again).toEqual(results.map((r) => ({ message_id: r.message_id, status: 'duplicate' })));
      expect(await copiesInLog(results.map((r) => r.message_id))).toEqual([1, 1, 1]);
    } finally {
      t.faults.clear();
    }
  });

  it('answers failed for what still fails after maxRetries, and other objects get other ids', async () => {
    t.faults.recordFault = { failRecord: () => true };
    const { fetch, exchanges } = recordingFetch();
    try {
      const results = await clientOf(t, { fetch, maxRetries: 2, retryBaseMs: 10 }).produce('jobs', [
        { payload: 1 },
        { payload: 1 },
      ]);
      expect(exchanges).toHaveLength(3);
      expect(results.map((r) => [r.status, r.error?.retryable])).toEqual([
        ['failed', true],
        ['failed', true],
      ]);
      expect(results[0]?.message_id).not.toBe(results[1]?.message_id);
    } finally {
      t.faults.clear();
    }
  });
});

describe('typed errors', () => {
  it('a wrong key is UnauthenticatedError, sent once', async () => {
    const { fetch, exchanges } = recordingFetch();
    const err = await clientOf(t, { apiKey: 'not-a-key', fetch })
      .stats('jobs')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnauthenticatedError);
    expect(err).toMatchObject({ code: 'UNAUTHENTICATED', status: 401 });
    expect(isRetryable(err)).toBe(false);
    expect(exchanges).toHaveLength(1);
  });

  it('a key without the scope is ForbiddenError with the scope it lacks', async () => {
    const err = await clientOf(t, { apiKey: PRODUCE_ONLY_KEY })
      .receive('jobs')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForbiddenError);
    expect(err).toMatchObject({ status: 403, details: { required_scope: 'consume:jobs' } });
  });

  it('an unknown queue is QueueNotFoundError and an unknown dead letter MessageNotFoundError', async () => {
    const client = clientOf(t);
    await expect(client.produce('no-such-queue', [{ payload: 1 }])).rejects.toBeInstanceOf(
      QueueNotFoundError,
    );
    await expect(client.dlqMessage('jobs', 'never-dead')).rejects.toMatchObject({
      constructor: MessageNotFoundError,
      code: 'MESSAGE_NOT_FOUND',
      status: 404,
    });
  });

  it('a bad body is InvalidRequestError with each issue and its path', async () => {
    const err = (await clientOf(t)
      .receive('jobs', { max_messages: 0, wait_seconds: 21 })
      .catch((e: unknown) => e)) as InvalidRequestError;
    expect(err).toBeInstanceOf(InvalidRequestError);
    expect(err).toBeInstanceOf(LeaseqApiError);
    expect(err.status).toBe(400);
    expect(err.issues.map((i) => i.path).sort()).toEqual(['max_messages', 'wait_seconds']);
    expect(err.details).toEqual({ issues: err.issues });
  });

  it('an unreachable server is a retryable LeaseqNetworkError after the retries', async () => {
    const client = clientOf(t, { baseUrl: 'http://127.0.0.1:9', maxRetries: 1, retryBaseMs: 10 });
    const err = await client.health().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LeaseqNetworkError);
    expect(isRetryable(err)).toBe(true);
  });
});

describe('consume and operations calls', () => {
  it('receive, extend, nack, ack, stats, dlq pages and health answer the API bodies', async () => {
    const client = clientOf(t);
    expect(await client.health()).toEqual({ status: 'ok' });
    await client.produce('calls', [
      { message_id: 'c-1', payload: { x: 1 }, headers: { h: 'v' } },
      { message_id: 'c-2', payload: 2 },
      { message_id: 'c-3', payload: 3 },
    ]);
    const got = [];
    while (got.length < 3) got.push(...(await client.receive('calls', { max_messages: 3, wait_seconds: 2 })));
    const byId = new Map(got.map((m) => [m.message_id, m]));
    expect(byId.get('c-1')).toMatchObject({ payload: { x: 1 }, headers: { h: 'v' }, attempt: 1, key: null });

    const c1 = byId.get('c-1')?.receipt as string;
    const extended = await client.extend('calls', c1, 120);
    expect(Date.parse(extended.lease_expires_at)).toBeGreaterThan(Date.now() + 100_000);
    expect(await client.ack('calls', [c1])).toEqual([{ receipt: c1, status: 'acked' }]);
    await expect(client.nack('calls', c1)).rejects.toBeInstanceOf(StaleReceiptError);

    for (const id of ['c-2', 'c-3']) {
      const dead = await client.nack('calls', byId.get(id)?.receipt as string, {
        retryable: false,
        error: `bad ${id}`,
      });
      expect(dead).toEqual({ status: 'dead_lettered', attempt: 1 });
    }
    const first = await client.dlq('calls', { limit: 1 });
    expect(first.messages.map((m) => m.message_id)).toEqual(['c-2']);
    const second = await client.dlq('calls', { limit: 1, cursor: first.next_cursor as string });
    expect(second.messages.map((m) => m.message_id)).toEqual(['c-3']);
    expect(await client.dlqMessage('calls', 'c-3')).toMatchObject({
      payload: 3,
      attempts: [{ attempt: 1, reason: 'non_retryable', error: 'bad c-3' }],
    });
    expect(await client.stats('calls')).toMatchObject({ produced_total: 3, acked_total: 1, dlq_depth: 2 });
  });

  it('pause and resume a queue, and a resume of a queue that is not paused is NotFoundError', async () => {
    const client = clientOf(t);
    const paused = await client.pause('jobs', 'incident 42');
    expect(paused).toMatchObject({ reason: 'incident 42', actor: 'local-admin' });
    expect((await client.stats('jobs')).paused).toEqual(paused);
    expect(await client.receive('jobs', { wait_seconds: 1 })).toEqual([]);
    expect(await client.resume('jobs', { reason: 'fixed' })).toEqual(paused);
    expect((await client.stats('jobs')).paused).toBeNull();
    await expect(client.resume('jobs')).rejects.toBeInstanceOf(NotFoundError);
  });
});
