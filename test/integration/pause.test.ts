import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../functions/core/async.js';
import { calls } from '../fixtures/lambda-consumer.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * Pausing a queue's deliveries during an incident: receive answers nothing and the
 * queue's Lambda consumers hold their batches while produce goes on; resume delivers everything,
 * and both are in the audit trail with who and why.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'pauses',
    queues: {
      jobs: { shards: 2 },
      events: { shards: 1, consumers: [{ name: 'billing', entry: 'test/fixtures/lambda-consumer.ts' }] },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

const pause = (queue: string, body: unknown, key?: string) =>
  t.api(`/queues/${queue}/pause`, { body, ...(key ? { key } : {}) });
const resume = (queue: string, body: unknown = {}) => t.api(`/queues/${queue}/resume`, { body });

describe('a paused pull queue', () => {
  it('accepts produce, delivers nothing until resumed, then everything; both audited', async () => {
    const q = queueApi(t, 'jobs');
    await q.produce([{ message_id: 'p-1', payload: 1 }]);
    expect((await q.receiveAll(1, 10_000)).map((m) => m.message_id)).toEqual(['p-1']);

    const paused = await pause('jobs', { reason: 'bad deploy of the billing worker' });
    expect(paused.status).toBe(200);
    expect(paused.body.paused).toMatchObject({
      actor: 'local-admin',
      reason: 'bad deploy of the billing worker',
    });
    expect(
      (
        await q.produce([
          { message_id: 'p-2', payload: 2 },
          { message_id: 'p-3', payload: 3 },
        ])
      ).map((r) => r.status),
    ).toEqual(['accepted', 'accepted']);
    expect(await q.receive({ wait_seconds: 2, max_messages: 10 })).toEqual([]);
    const stats = await q.stats();
    expect(stats.paused).toMatchObject({ reason: 'bad deploy of the billing worker' });
    expect(stats.depth).toBe(2);

    // A long poll waiting when the pause ends gets the messages within its wait.
    const waiting = q.receive({ wait_seconds: 10, max_messages: 10 });
    await sleep(300);
    const resumed = await resume('jobs', { reason: 'rolled back' });
    expect(resumed.status).toBe(200);
    expect(resumed.body.resumed).toMatchObject({ reason: 'bad deploy of the billing worker' });
    const started = Date.now();
    const got = [...(await waiting)];
    if (got.length < 2) got.push(...(await q.receiveAll(2 - got.length, 10_000)));
    expect(got.map((m) => m.message_id).sort()).toEqual(['p-2', 'p-3']);
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await q.stats()).paused).toBeNull();

    const audit = await t.api('/queues/jobs/audit');
    expect(audit.body.entries.slice(0, 2)).toMatchObject([
      { action: 'resume', actor: 'local-admin', target: 'jobs', reason: 'rolled back' },
      { action: 'pause', actor: 'local-admin', target: 'jobs', reason: 'bad deploy of the billing worker' },
    ]);
  });

  it('refuses a pause without a reason, a resume of a queue that is not paused, and a key without admin scope', async () => {
    const noReason = await pause('jobs', {});
    expect(noReason.status).toBe(400);
    expect(noReason.body.error.details.issues[0].path).toBe('reason');
    const notPaused = await resume('jobs');
    expect(notPaused.status).toBe(404);
    expect(notPaused.body.error.code).toBe('NOT_FOUND');
    const worker = await t.api('/keys', { body: { name: 'jobs-worker', scopes: ['consume:jobs'] } });
    const forbidden = await pause('jobs', { reason: 'mine' }, worker.body.key);
    expect(forbidden.status).toBe(403);
    expect((await queueApi(t, 'jobs').stats()).paused).toBeNull();
  });
});

describe('a paused queue with a Lambda consumer', () => {
  it('holds its batches until resumed, then the consumer handles each message once', async () => {
    const q = queueApi(t, 'events');
    expect((await pause('events', { reason: 'downstream outage' })).status).toBe(200);
    await q.produce([
      { message_id: 'e-1', payload: {} },
      { message_id: 'e-2', payload: {} },
    ]);
    await sleep(2500);
    expect(calls.filter((c) => c.message_id.startsWith('e-'))).toEqual([]);
    expect((await resume('events')).status).toBe(200);
    const deadline = Date.now() + 15_000;
    while (calls.filter((c) => c.message_id.startsWith('e-')).length < 2 && Date.now() < deadline)
      await sleep(50);
    expect(
      calls
        .filter((c) => c.message_id.startsWith('e-'))
        .map((c) => c.message_id)
        .sort(),
    ).toEqual(['e-1', 'e-2']);
  });
});
