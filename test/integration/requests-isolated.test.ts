import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processAdmissions } from '../../functions/admission/admitted-signal.js';
import { createClients } from '../../functions/aws/clients.js';
import { GetRecordsCommand } from '../../functions/aws/kinesis.js';
import { ownStreamName } from '../../functions/core/config.js';
import { calls } from '../fixtures/ordered-lambda-consumer.js';
import { queueApi } from '../helpers/queue-api.js';
import { firstIterator, hogReads } from '../helpers/read-hog.js';
import { FAST, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { until } from '../helpers/until.js';

/**
 * The local runtime as AWS runs it (`requestsIsolated`, the bench's --as-aws): no admission wakes
 * a long poll of its own process or hands it leases; a waiting receive finds what was produced by
 * its own re-reads.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime(
    {
      tenant: 'isolated',
      queues: {
        plain: { shards: 1, fast_admission: 'always' },
        // Admitted by dispatch alone, whose mapping reads on enhanced fan-out.
        fanned: { shards: 1, fast_admission: 'off', fan_out: true },
        // A Lambda consumer's mapping on fan-out too.
        ledger: {
          shards: 1,
          fan_out: true,
          consumers: [{ name: 'books', entry: 'test/fixtures/ordered-lambda-consumer.ts' }],
        },
      },
    },
    undefined,
    { ...FAST, requestsIsolated: true },
  );
});
afterAll(async () => {
  await t?.close();
});

describe('requests isolated as on AWS', () => {
  it('deliver to a long poll what is produced while it waits, with nobody waiting in-process', async () => {
    const q = queueApi(t, 'plain');
    const polling = q.receive({ max_messages: 10, wait_seconds: 10 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The poll waits by re-reading, not on the process's signal, which fast admission would use.
    expect(processAdmissions.waits(`${t.runtime.config.tableName}/plain`)).toBe(false);
    await q.produce([{ message_id: 'found', payload: 1 }]);
    const got = await polling;
    expect(got.map((m) => m.message_id)).toEqual(['found']);
    await q.ack(got.map((m) => m.receipt));
  });

  it("refuses a shard's reads past 5 a second, as Kinesis does, with Kinesis' error", async () => {
    // One attempt a call: the SDK's own retries would wait the refusals out.
    const clients = createClients({ region: 'us-east-1', endpoints: t.runtime.endpoints, maxAttempts: 1 });
    try {
      const ShardIterator = await firstIterator(clients, ownStreamName('isolated', 'plain'));
      const started = Date.now();
      const reads = await Promise.allSettled(
        Array.from({ length: 12 }, () => clients.kinesis.send(new GetRecordsCommand({ ShardIterator }))),
      );
      const seconds = (Date.now() - started) / 1000;
      const served = reads.filter((r) => r.status === 'fulfilled').length;
      // The runtime's own readers (dispatch, produce's passes) share the shard's reads too.
      expect(served).toBeLessThanOrEqual(5 * Math.ceil(seconds + 1));
      const refused = reads.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).name] : []));
      expect(refused.length).toBeGreaterThan(0);
      expect(new Set(refused)).toEqual(new Set(['ProvisionedThroughputExceededException']));
    } finally {
      clients.destroy();
    }
  });

  it("admits through dispatch's fan-out mapping while other readers take the shard's five reads", async () => {
    const hog = await hogReads(t, ownStreamName('isolated', 'fanned'));
    try {
      const q = queueApi(t, 'fanned');
      await q.produce([{ message_id: 'pushed', payload: 1 }]);
      const got = await q.receive({ max_messages: 10, wait_seconds: 10 });
      expect(got.map((m) => m.message_id)).toEqual(['pushed']);
      await q.ack(got.map((m) => m.receipt));
    } finally {
      // The hog was refused meanwhile: the shard's polling reads were taken.
      expect(await hog.stop()).toBeGreaterThan(0);
    }
  });

  it("feeds a Lambda consumer's fan-out mapping while other readers take the shard's five reads", async () => {
    const hog = await hogReads(t, ownStreamName('isolated', 'ledger'));
    try {
      await queueApi(t, 'ledger').produce([{ message_id: 'handled', payload: { n: 1 } }]);
      await until(() => calls.some((c) => c.message_id === 'handled' && c.ok), 10_000);
    } finally {
      expect(await hog.stop()).toBeGreaterThan(0);
    }
  });
});
