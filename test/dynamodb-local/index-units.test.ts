import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INDEX_WRITES_PER_DELIVERED_MESSAGE } from '../../bench/prices.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * DynamoDB Local reports index capacity, which dynalite does not: here the bench's estimate of
 * gsi1 writes per delivered message (bench/prices.ts, counted from the code) is measured at the
 * SDK client instead, on the happy path (produce, receive, ack; one consumer, no contention).
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({ tenant: 'units', queues: { jobs: { shards: 1 } } });
});
afterAll(async () => {
  await t?.close();
});

describe('index write units per delivered message', () => {
  it('are what the bench estimates, measured where DynamoDB reports them', async () => {
    const q = queueApi(t, 'jobs');
    const N = 20;
    const meter = t.runtime.clients.meter;
    const before = meter.snapshot();
    const produced = await q.produce(
      Array.from({ length: N }, (_, i) => ({ message_id: `u-${i}`, payload: i })),
    );
    expect(produced.every((r) => r.status === 'accepted')).toBe(true);
    const got = await q.receiveAll(N, 20_000, { max_messages: 10 });
    expect(got).toHaveLength(N);
    const acked = await q.ack(got.map((m) => m.receipt));
    expect(acked.every((r) => r.status === 'acked')).toBe(true);
    const after = meter.snapshot();
    // Only the message state items carry gsi1 keys; the sweep and the dedup, body and counter
    // items write none, so the difference is the messages' own.
    expect((after.indexWriteUnits - before.indexWriteUnits) / N).toBe(INDEX_WRITES_PER_DELIVERED_MESSAGE);
    expect(after.writeUnits - before.writeUnits).toBeGreaterThan(0);
  });
});
