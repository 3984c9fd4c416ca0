import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processAdmissions } from '../../functions/admission/admitted-signal.js';
import { queueApi } from '../helpers/queue-api.js';
import { FAST, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The local runtime as AWS runs it (`requestsIsolated`, the bench's --as-aws): no admission wakes
 * a long poll of its own process or hands it leases; a waiting receive finds what was produced by
 * its own re-reads.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime(
    { tenant: 'isolated', queues: { plain: { shards: 1, fast_admission: 'always' } } },
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
});
