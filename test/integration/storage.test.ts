import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payloadBytes } from '../../functions/core/envelope.js';
import { buildServices } from '../../functions/services.js';
import { calls } from '../fixtures/consumer-operations.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { until } from '../helpers/until.js';

/**
 * What a queue holds against its storage quota: freed by acks, purges and the expiry of dead
 * letters (which DynamoDB's TTL deletes unseen); on a push queue, per Lambda consumer, the queue
 * holding what its slowest consumer has not finished (test/fixtures/consumer-operations.ts).
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'storage',
    queues: {
      jobs: { shards: 1, max_attempts: 1 },
      events: {
        shards: 1,
        backoff_seconds: [0],
        max_attempts: 2,
        storage_quota_bytes: 100,
        consumers: [
          { name: 'billing', entry: 'test/fixtures/consumer-operations.ts', handler: 'billing' },
          { name: 'audit', entry: 'test/fixtures/consumer-operations.ts', handler: 'audit' },
        ],
      },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

const bytes = (payload: unknown) => payloadBytes({ payload });
const HOUR = 3_600_000;

describe('a pull queue', () => {
  it('holds what is not acked; acks, purges and expired dead letters free it', async () => {
    const q = queueApi(t, 'jobs');
    const payloads = {
      'acked-1': 'a'.repeat(100),
      'purged-1': 'p'.repeat(200),
      'expires-1': 'e'.repeat(400),
    };
    await q.produce(Object.entries(payloads).map(([message_id, payload]) => ({ message_id, payload })));
    const all = bytes(payloads['acked-1']) + bytes(payloads['purged-1']) + bytes(payloads['expires-1']);
    expect((await q.stats()).stored_bytes).toBe(all);
    const got = await q.receiveAll(3, 10_000);
    const receipt = (id: string) => got.find((m) => m.message_id === id)?.receipt;
    await q.ack([receipt('acked-1') as string]);
    for (const id of ['purged-1', 'expires-1'])
      expect((await q.nack({ receipt: receipt(id), retryable: false })).status).toBe(200);
    // The two dead letters still hold theirs.
    expect((await q.stats()).stored_bytes).toBe(all - bytes(payloads['acked-1']));
    expect((await t.api('/queues/jobs/dlq/purged-1', { method: 'DELETE' })).status).toBe(204);
    expect((await q.stats()).stored_bytes).toBe(bytes(payloads['expires-1']));

    // The sweep, once the DLQ retention (336 h) of the one left has passed.
    const sweep = buildServices(t.runtime.config, t.runtime.clients);
    // Not yet: the dead letter's bytes are still held (the usage's DLQ bytes).
    expect(await sweep.storage.expireDeadLetters('jobs', Date.now() + 300 * HOUR)).toEqual({
      bytes: 0,
      letters: 0,
      held: bytes(payloads['expires-1']),
    });
    // One dead letter expired (the purged one left its bucket): what dlq_expired counts.
    expect(await sweep.storage.expireDeadLetters('jobs', Date.now() + 337 * HOUR)).toEqual({
      bytes: bytes(payloads['expires-1']),
      letters: 1,
      held: 0,
    });
    await sweep.counters.flush();
    expect((await q.stats()).stored_bytes).toBe(0);
    // Freed once: its bucket is gone.
    expect(await sweep.storage.expireDeadLetters('jobs', Date.now() + 400 * HOUR)).toEqual({
      bytes: 0,
      letters: 0,
      held: 0,
    });
  }, 30_000);
});

describe('a push queue', () => {
  it('holds what its slowest consumer has not finished, and refuses produce over the quota', async () => {
    const events = queueApi(t, 'events');
    const poison = { poison: ['billing'], pad: 'x'.repeat(120) };
    await events.produce([
      { message_id: 'st-poison', payload: poison },
      { message_id: 'st-ok', payload: { n: 1 } },
    ]);
    const deadAtBilling = async () =>
      (await t.api('/queues/events/dlq/st-poison?consumer=billing')).status === 200;
    await until(
      async () =>
        (await deadAtBilling()) &&
        calls.some((c) => c.consumer === 'audit' && c.message_id === 'st-poison') &&
        calls.some((c) => c.consumer === 'billing' && c.message_id === 'st-ok'),
    );
    // Each invocation writes its counts as it ends; the stats read them.
    await until(async () => (await events.stats()).stored_bytes_by_consumer.audit === 0);
    const stats = await events.stats();
    expect(stats.stored_bytes_by_consumer).toEqual({ billing: bytes(poison), audit: 0 });
    expect(stats.stored_bytes).toBe(bytes(poison));
    // billing's dead letter holds the queue over its 100 bytes: produce waits for it.
    const refused = await t.api('/queues/events/messages', { body: { messages: [{ payload: 1 }] } });
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(`holds ${bytes(poison)} bytes`);
    expect((await t.api('/queues/events/dlq/st-poison?consumer=billing', { method: 'DELETE' })).status).toBe(
      204,
    );
    expect((await events.stats()).stored_bytes_by_consumer).toEqual({ billing: 0, audit: 0 });
    expect((await t.api('/queues/events/messages', { body: { messages: [{ payload: 1 }] } })).status).toBe(
      200,
    );
  }, 30_000);
});
