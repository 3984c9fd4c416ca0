import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARM_EVERY_MS } from '../../functions/core/sweep-rest.js';
import { SweepArm } from '../../functions/store/sweep-arm.js';
import { until } from '../client/support.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The sweep rests when nothing is due soon (core/sweep-rest.ts): its schedule then fires once a
 * minute, as EventBridge's does on AWS, and the work that leaves state for it wakes it at once.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({ tenant: 'rest', queues: { work: { shards: 1 } } });
});
afterAll(async () => {
  await t?.close();
});

describe('a resting sweep', () => {
  it('rests, wakes for a retry, stays up while a lease runs out soon, and rests once all is acked', async () => {
    const q = queueApi(t, 'work');
    const arm = new SweepArm(t.runtime.clients.doc, t.runtime.config.tableName);
    await until('the sweep rests with nothing to do', () => t.runtime.sweep.resting, 15_000);

    // The produce arms the sweep and wakes it: the nack's retry, due in a second, is not left
    // for the schedule's next minute.
    await q.produce([
      { message_id: 'kept', payload: 1 },
      { message_id: 'retried', payload: 2 },
    ]);
    const armedAt = await arm.armedAt();
    expect(armedAt).toBeGreaterThan(Date.now() - 10_000);
    expect(t.runtime.sweep.resting).toBe(false);
    const first = await q.receiveAll(2, 10_000, { lease_seconds: 60 });
    const kept = first.find((m) => m.message_id === 'kept');
    const retried = first.find((m) => m.message_id === 'retried');
    expect((await q.nack({ receipt: retried?.receipt, retry_after_seconds: 1 })).status).toBe(200);
    const [again] = await q.receiveAll(1, 10_000);
    expect(again).toMatchObject({ message_id: 'retried', attempt: 2 });
    await q.ack([again?.receipt as string]);

    // `kept` stays leased: its lease runs out within the horizon the whole time, so the sweep
    // stays up after the arm has settled, until the lease is nearly over.
    const leaseEnds = Date.parse(kept?.lease_expires_at as string);
    let rested = false;
    while (Date.now() < leaseEnds - 5_000) {
      rested ||= t.runtime.sweep.resting;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(Date.now() - (armedAt as number)).toBeGreaterThan(ARM_EVERY_MS + 10_000);
    expect(rested).toBe(false);

    // Acked: nothing is due, and once this last arm settles the sweep rests again.
    await q.ack([kept?.receipt as string]);
    await until('the sweep rests again', () => t.runtime.sweep.resting, 60_000);
  }, 150_000);
});
