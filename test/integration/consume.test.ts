import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { tampered } from '../helpers/tampered.js';

/** Every rule of docs/contract.md, "Consume (pull)", each with its own test. */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'consume',
    queues: {
      jobs: { shards: 2 },
      stale: { shards: 1 },
      expiry: { shards: 1, lease_seconds: 1, backoff_seconds: [1] },
      extend: { shards: 1, lease_seconds: 3, max_lease_seconds: 6, backoff_seconds: [30] },
      dlq: { shards: 1, max_attempts: 3, backoff_seconds: [0] },
      delay: { shards: 1 },
      big: { shards: 1 },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('receive', () => {
  it('delivers a produced message with a lease, a receipt and attempt 1', async () => {
    const q = queueApi(t, 'jobs');
    await q.produce([{ message_id: 'r-1', key: 'k1', payload: { a: 1 }, headers: { h: 'v' } }]);
    const before = Date.now();
    const [m] = await q.receive({ wait_seconds: 5, lease_seconds: 30 });
    expect(m).toMatchObject({
      message_id: 'r-1',
      key: 'k1',
      payload: { a: 1 },
      headers: { h: 'v' },
      attempt: 1,
    });
    expect(typeof m?.receipt).toBe('string');
    const expires = Date.parse(m?.lease_expires_at ?? '');
    expect(expires).toBeGreaterThanOrEqual(before + 29_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 30_000);
    // Leased: nobody else receives it.
    expect(await q.receive()).toEqual([]);
    expect((await q.ack([m?.receipt as string]))[0]?.status).toBe('acked');
  });

  it('long poll returns as soon as a message arrives', async () => {
    const q = queueApi(t, 'jobs');
    const started = Date.now();
    const pending = q.receive({ wait_seconds: 15 });
    await sleep(700);
    await q.produce([{ message_id: 'lp-1', payload: 1 }]);
    const got = await pending;
    const took = Date.now() - started;
    expect(got.map((m) => m.message_id)).toEqual(['lp-1']);
    expect(took).toBeGreaterThanOrEqual(600);
    expect(took).toBeLessThan(5_000);
    await q.ack(got.map((m) => m.receipt));
  });

  it('long poll with nothing to deliver answers an empty list when the wait ends', async () => {
    const started = Date.now();
    expect(await queueApi(t, 'jobs').receive({ wait_seconds: 1 })).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('rejects a lease longer than the queue max and bad receive bodies with 400', async () => {
    for (const body of [
      { lease_seconds: 3601 },
      { max_messages: 0 },
      { max_messages: 101 },
      { wait_seconds: 21 },
      { x: 1 },
    ]) {
      const res = await t.api('/queues/jobs/receive', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('INVALID_REQUEST');
    }
  });
});

describe('ack', () => {
  it('is idempotent for the current receipt and rejects altered receipts as invalid', async () => {
    const q = queueApi(t, 'jobs');
    await q.produce([{ message_id: 'ack-1', payload: 1 }]);
    const [m] = await q.receiveAll(1, 5000);
    const receipt = m?.receipt as string;
    const [body, mac] = receipt.split('.') as [string, string];
    const forged = Buffer.from(body, 'base64url').toString().replace('"g":1', '"g":2');
    const altered = [
      `${Buffer.from(forged).toString('base64url')}.${mac}`,
      `${body}.${tampered(mac)}`,
      'not-a-receipt',
    ];
    const results = await q.ack([receipt, receipt, ...altered]);
    expect(results.map((r) => r.status)).toEqual([
      'acked',
      'acked',
      'invalid_receipt',
      'invalid_receipt',
      'invalid_receipt',
    ]);
    expect((await q.ack([receipt]))[0]?.status).toBe('acked');
  });

  it('rejects a receipt of another queue as invalid', async () => {
    const q = queueApi(t, 'jobs');
    await q.produce([{ message_id: 'cross-1', payload: 1 }]);
    const [m] = await q.receiveAll(1, 5000);
    expect((await queueApi(t, 'stale').ack([m?.receipt as string]))[0]?.status).toBe('invalid_receipt');
    await q.ack([m?.receipt as string]);
  });
});

describe('stale receipts', () => {
  it('can neither ack nor nack nor extend, and each attempt is counted', async () => {
    const q = queueApi(t, 'stale');
    await q.produce([{ message_id: 's-1', payload: 1 }]);
    const [first] = await q.receiveAll(1, 5000, { lease_seconds: 1 });
    await sleep(1100);
    await t.runtime.sweep.fire();
    // The expired lease went to the retry path (backoff 10 s): the old receipt is stale.
    const before = (await q.stats()).stale_receipts_total;
    expect((await q.ack([first?.receipt as string]))[0]?.status).toBe('stale_receipt');
    const nack = await q.nack({ receipt: first?.receipt });
    expect(nack.status).toBe(409);
    expect(nack.body.error.code).toBe('STALE_RECEIPT');
    const extend = await q.extend({ receipt: first?.receipt, lease_seconds: 10 });
    expect(extend.status).toBe(409);
    expect(extend.body.error.code).toBe('STALE_RECEIPT');
    expect((await q.stats()).stale_receipts_total).toBe(before + 3);
  });

  it('an altered receipt is 400 for nack and extend', async () => {
    const q = queueApi(t, 'stale');
    for (const res of [
      await q.nack({ receipt: 'abc.def' }),
      await q.extend({ receipt: 'abc.def', lease_seconds: 5 }),
    ]) {
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INVALID_REQUEST');
    }
  });
});

describe('lease expiry', () => {
  it('redelivers an unacked message with attempt 2 after the first backoff', async () => {
    const q = queueApi(t, 'expiry');
    await q.produce([{ message_id: 'exp-1', payload: 'x' }]);
    const [first] = await q.receiveAll(1, 5000);
    expect(first?.attempt).toBe(1);
    const leaseEnd = Date.parse(first?.lease_expires_at ?? '');
    const [second] = await q.receiveAll(1, 8000);
    const at = Date.now();
    expect(second?.message_id).toBe('exp-1');
    expect(second?.attempt).toBe(2);
    // Lease (1 s) and then the 1 s backoff tier.
    expect(at).toBeGreaterThanOrEqual(leaseEnd + 1000);
    expect(second?.receipt).not.toBe(first?.receipt);
    expect((await q.ack([second?.receipt as string]))[0]?.status).toBe('acked');
  });
});

describe('extend', () => {
  it('keeps a message past its first lease and stops at the max total lease', async () => {
    const q = queueApi(t, 'extend');
    await q.produce([{ message_id: 'ext-1', payload: 1 }]);
    const [m] = await q.receiveAll(1, 5000);
    const deliveredAt = Date.parse(m?.lease_expires_at ?? '') - 3000;
    let last: { lease_expires_at: string; max_lease_expires_at: string } | undefined;
    // Heartbeats every lease/3, as the client's Worker sends them, while the sweep keeps running.
    while (Date.now() - deliveredAt < 4000) {
      await sleep(1000);
      const res = await q.extend({ receipt: m?.receipt, lease_seconds: 3 });
      expect(res.status).toBe(200);
      last = res.body;
    }
    // Past the first lease (3 s) and still ours: nobody else got it.
    expect(await q.receive()).toEqual([]);
    const max = Date.parse(last?.max_lease_expires_at ?? '');
    expect(Math.abs(max - (deliveredAt + 6000))).toBeLessThan(100);
    expect(Date.parse(last?.lease_expires_at ?? '')).toBeLessThanOrEqual(max);
    await sleep(Math.max(0, max - Date.now() + 100));
    await t.runtime.sweep.fire();
    const late = await q.extend({ receipt: m?.receipt, lease_seconds: 2 });
    expect(late.status).toBe(409);
  });
});

describe('failure and the DLQ', () => {
  it('nack with retryable false dead-letters at once, with its history', async () => {
    const q = queueApi(t, 'dlq');
    await q.produce([{ message_id: 'fatal-1', payload: { p: 1 }, headers: { a: 'b' } }]);
    const [m] = await q.receiveAll(1, 5000, { consumer_id: 'worker-a' });
    const res = await q.nack({ receipt: m?.receipt, retryable: false, error: 'cannot parse' });
    expect(res.body).toEqual({ status: 'dead_lettered', attempt: 1 });
    const dead = await q.dlq('fatal-1');
    expect(dead.status).toBe(200);
    expect(dead.body).toMatchObject({
      message_id: 'fatal-1',
      payload: { p: 1 },
      headers: { a: 'b' },
      attempts: [{ attempt: 1, consumer_id: 'worker-a', reason: 'non_retryable', error: 'cannot parse' }],
    });
  });

  it('after max_attempts failures the message is in the DLQ with every attempt', async () => {
    const q = queueApi(t, 'dlq');
    await q.produce([{ message_id: 'poison-1', payload: 'p' }]);
    for (let attempt = 1; attempt <= 3; attempt++) {
      const [m] = await q.receiveAll(1, 8000);
      expect(m?.attempt).toBe(attempt);
      const res = await q.nack({ receipt: m?.receipt, error: `failure ${attempt}` });
      expect(res.body.status).toBe(attempt < 3 ? 'retry_scheduled' : 'dead_lettered');
    }
    const dead = await q.dlq('poison-1');
    expect(dead.body.attempts.map((a: { attempt: number; error: string }) => [a.attempt, a.error])).toEqual([
      [1, 'failure 1'],
      [2, 'failure 2'],
      [3, 'failure 3'],
    ]);
    const list = await q.dlq();
    expect(list.body.messages.map((m: { message_id: string }) => m.message_id)).toEqual([
      'fatal-1',
      'poison-1',
    ]);
    const stats = await q.stats();
    expect(stats.dlq_depth).toBe(2);
    expect(stats.dlq_oldest_age_seconds).toBeGreaterThan(0);
  });

  it('nack with retry_after_seconds schedules that delay instead of the tier', async () => {
    const q = queueApi(t, 'expiry');
    await q.produce([{ message_id: 'ra-1', payload: 1 }]);
    const [m] = await q.receiveAll(1, 5000);
    const before = Date.now();
    const res = await q.nack({ receipt: m?.receipt, retry_after_seconds: 2 });
    expect(res.body.status).toBe('retry_scheduled');
    expect(res.body.attempt).toBe(2);
    expect(Date.parse(res.body.next_attempt_at)).toBeGreaterThanOrEqual(before + 2000);
    expect((await q.stats()).delayed).toBe(1);
    const [again] = await q.receiveAll(1, 6000);
    expect(Date.now()).toBeGreaterThanOrEqual(before + 2000);
    expect(again?.attempt).toBe(2);
    await q.ack([again?.receipt as string]);
  });
});

describe('release', () => {
  it('gives a message back without using up an attempt or writing history', async () => {
    const q = queueApi(t, 'dlq');
    await q.produce([{ message_id: 'rel-1', payload: 1 }]);
    for (let i = 0; i < 4; i++) {
      const [m] = await q.receiveAll(1, 8000);
      expect(m?.attempt).toBe(1);
      const res = await q.nack({ receipt: m?.receipt, release: true });
      expect(res.body).toMatchObject({ status: 'retry_scheduled', attempt: 1 });
    }
    const [m] = await q.receiveAll(1, 8000);
    expect(m?.attempt).toBe(1);
    await q.ack([m?.receipt as string]);
    expect((await t.api('/queues/dlq/messages/rel-1')).body.attempts).toEqual([]);
    const contradiction = await q.nack({ receipt: m?.receipt, release: true, retryable: false });
    expect(contradiction.status).toBe(400);
  });
});

describe('a failure that loses its race', () => {
  it('leaves no history of an attempt that did not end (the lease had already ended)', async () => {
    const q = queueApi(t, 'jobs');
    await q.produce([{ message_id: 'g-1', payload: 1 }]);
    const [m] = await q.receiveAll(1, 8000, { lease_seconds: 1 });
    expect(m?.message_id).toBe('g-1');
    await new Promise((r) => setTimeout(r, 1300));
    const late = await q.nack({ receipt: m?.receipt, error: 'too late' });
    expect(late.status).toBe(409);
    const trace = (await t.api('/queues/jobs/messages/g-1')).body;
    expect(trace.attempts.map((a: { error: string | null }) => a.error)).not.toContain('too late');
  });
});

describe('delay and claim-check', () => {
  it('honours delay_seconds on produce', async () => {
    const q = queueApi(t, 'delay');
    const produced = Date.now();
    const [server] = await q
      .produce([
        { message_id: 'd-1', payload: 1, delay_seconds: 5 },
        { payload: 2, delay_seconds: 5 },
      ])
      .then((r) => r.slice(1));
    // Delayed past what the produce and this empty receive take on a loaded machine (2 s seen).
    expect(await q.receive({ wait_seconds: 1 })).toEqual([]);
    const got = await q.receiveAll(2, 10_000);
    expect(Date.now()).toBeGreaterThanOrEqual(produced + 5000);
    // Once each: the delayed entry came back as its next entry only, whoever read the log meanwhile.
    got.push(...(await q.receive({ max_messages: 10, wait_seconds: 1 })));
    expect(got.map((m) => m.message_id).sort()).toEqual(['d-1', server?.message_id].sort());
    expect(got.map((m) => m.attempt)).toEqual([1, 1]);
  });

  it('delivers a 300 KB claim-checked payload intact', async () => {
    const q = queueApi(t, 'big');
    const payload = { blob: 'y'.repeat(300 * 1024), n: [1, 2, 3] };
    await q.produce([{ message_id: 'big-1', payload }]);
    const [m] = await q.receiveAll(1, 5000);
    expect(m?.payload).toEqual(payload);
  });
});
