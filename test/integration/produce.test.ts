import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCommand } from '../../functions/aws/dynamodb.js';
import { dedupKey } from '../../functions/store/keys.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime();
});
afterAll(async () => {
  await t?.close();
});

const produce = (queue: string, messages: unknown[]) =>
  t.api(`/queues/${queue}/messages`, { body: { messages } });

describe('produce', () => {
  it('accepts a message and appends its envelope to the queue stream', async () => {
    const before = Date.now();
    const res = await produce('jobs', [
      { message_id: 'order-1', key: 'customer-7', payload: { total: 42 }, headers: { trace: 'abc' } },
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ results: [{ message_id: 'order-1', status: 'accepted' }] });

    const records = (await t.records('jobs')).filter((r) => r.envelope.message_id === 'order-1');
    expect(records).toHaveLength(1);
    const [record] = records;
    expect(record?.partitionKey).toBe('customer-7');
    expect(record?.envelope).toMatchObject({
      v: 1,
      message_id: 'order-1',
      queue: 'jobs',
      key: 'customer-7',
      headers: { trace: 'abc' },
      attempt: 1,
      payload: { total: 42 },
    });
    expect(Date.parse(record?.envelope.produced_at ?? '')).toBeGreaterThanOrEqual(before - 5);
    expect(record?.envelope.claim).toBeUndefined();
  });

  it('generates distinct, time-ordered ids when the producer sends none', async () => {
    const res = await produce('jobs', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    const ids: string[] = res.body.results.map((r: { message_id: string }) => r.message_id);
    expect(res.body.results.every((r: { status: string }) => r.status === 'accepted')).toBe(true);
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect([...ids].sort()).toEqual(ids);
    const stored = (await t.records('jobs')).filter((r) => ids.includes(r.envelope.message_id));
    expect(stored.map((r) => r.envelope.payload).sort()).toEqual([1, 2, 3]);
    // Without a key, the partition key is the message id.
    for (const r of stored) expect(r.partitionKey).toBe(r.envelope.message_id);
  });

  it('answers duplicate for a retried id and appends it once, also in a mixed batch', async () => {
    const first = await produce('jobs', [{ message_id: 'dup-1', payload: 'a' }]);
    expect(first.body.results[0].status).toBe('accepted');
    const retry = await produce('jobs', [
      { message_id: 'dup-2', payload: 'b' },
      { message_id: 'dup-1', payload: 'a' },
      { message_id: 'dup-3', payload: 'c' },
      { message_id: 'dup-2', payload: 'b' },
    ]);
    expect(retry.body.results).toEqual([
      { message_id: 'dup-2', status: 'accepted' },
      { message_id: 'dup-1', status: 'duplicate' },
      { message_id: 'dup-3', status: 'accepted' },
      { message_id: 'dup-2', status: 'duplicate' },
    ]);
    const ids = (await t.records('jobs'))
      .map((r) => r.envelope.message_id)
      .filter((id) => id.startsWith('dup-'));
    expect(ids.sort()).toEqual(['dup-1', 'dup-2', 'dup-3']);
  });

  it('keeps ids of different queues apart', async () => {
    const a = await produce('jobs', [{ message_id: 'shared-id', payload: 1 }]);
    const b = await produce('ledger', [{ message_id: 'shared-id', key: 'k', payload: 1 }]);
    expect(a.body.results[0].status).toBe('accepted');
    expect(b.body.results[0].status).toBe('accepted');
  });

  it('puts a payload over the claim-check threshold in S3 and the reference in the record', async () => {
    const big = { blob: 'x'.repeat(300 * 1024) };
    const res = await produce('jobs', [{ message_id: 'big-1', payload: big }]);
    expect(res.body.results[0].status).toBe('accepted');
    const [record] = (await t.records('jobs')).filter((r) => r.envelope.message_id === 'big-1');
    expect(record?.envelope.payload).toBeUndefined();
    const claim = record?.envelope.claim;
    expect(claim?.key).toMatch(/^claims\/jobs\/big-1\//);
    expect(claim?.bytes).toBe(Buffer.byteLength(JSON.stringify(big)));
    const object = await (await t.runtime.clients.s3.client()).send(
      new GetObjectCommand({ Bucket: t.runtime.config.bucketName, Key: claim?.key }),
    );
    expect(JSON.parse(await (object.Body?.transformToString() ?? Promise.resolve('')))).toEqual(big);
  });

  it('writes a dedup record only for what landed in the log', async () => {
    await produce('jobs', [{ message_id: 'tracked-1', payload: 1 }]);
    const item = await t.runtime.clients.doc.send(
      new GetCommand({ TableName: t.runtime.config.tableName, Key: dedupKey('jobs', 'tracked-1') }),
    );
    const [record] = (await t.records('jobs')).filter((r) => r.envelope.message_id === 'tracked-1');
    expect(item.Item).toMatchObject({ shard: record?.shardId, sequence: record?.sequenceNumber });
    expect(item.Item?.expires_at).toBeGreaterThan(Date.now() + 86_000_000);
  });
});

describe('authentication and routing', () => {
  it('answers health without a key', async () => {
    const res = await t.api('/health', { key: null });
    expect(res).toMatchObject({ status: 200, body: { status: 'ok' } });
  });

  it('rejects a request with no key or an unknown key with 401', async () => {
    for (const key of [null, 'not-a-key']) {
      const res = await t.api('/queues/jobs/messages', { key, body: { messages: [{ payload: 1 }] } });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHENTICATED');
    }
  });

  it('answers 404 QUEUE_NOT_FOUND for an unknown queue and NOT_FOUND for an unknown route', async () => {
    const res = await produce('nope', [{ payload: 1 }]);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('QUEUE_NOT_FOUND');
    const route = await t.api('/nowhere');
    expect(route.status).toBe(404);
    expect(route.body.error.code).toBe('NOT_FOUND');
  });
});
