import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * DynamoDB Local reports index capacity, which dynalite does not: index write units per delivered
 * message on the happy path (produce, receive, ack; one consumer, no contention), measured at the
 * SDK client. The lease layer writes no index on that path, on unordered and ordered queues alike
 * (a key's item is in gsi1 only while the key is parked).
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'units',
    queues: { jobs: { shards: 1 }, ledger: { shards: 1, ordered: true } },
  });
});
afterAll(async () => {
  await t?.close();
});

async function indexUnitsPerMessage(queue: string, key?: string): Promise<number> {
  const q = queueApi(t, queue);
  const N = 20;
  const meter = t.runtime.clients.meter;
  const before = meter.snapshot();
  const produced = await q.produce(
    Array.from({ length: N }, (_, i) => ({
      message_id: `${queue}-${i}`,
      payload: i,
      ...(key ? { key: `${key}${i}` } : {}),
    })),
  );
  expect(produced.every((r) => r.status === 'accepted')).toBe(true);
  const got = await q.receiveAll(N, 20_000, { max_messages: 10 });
  expect(got).toHaveLength(N);
  const acked = await q.ack(got.map((m) => m.receipt));
  expect(acked.every((r) => r.status === 'acked')).toBe(true);
  const after = meter.snapshot();
  expect(after.writeUnits - before.writeUnits).toBeGreaterThan(0);
  return (after.indexWriteUnits - before.indexWriteUnits) / N;
}

describe('index write units per delivered message', () => {
  it('are none on an unordered queue', async () => {
    expect(await indexUnitsPerMessage('jobs')).toBe(0);
  });

  it('are none on an ordered queue, whose keys admission writes', async () => {
    expect(await indexUnitsPerMessage('ledger', 'k')).toBe(0);
  });
});
