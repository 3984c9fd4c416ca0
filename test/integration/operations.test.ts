import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/** The DLQ owner's tools: redrive (rate, filter, cancel), purge, the audit trail and message trace. */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'ops',
    queues: {
      rate: { shards: 2 },
      filter: { shards: 1 },
      cancel: { shards: 1 },
      purge: { shards: 1 },
      trace: { shards: 1, backoff_seconds: [0], max_attempts: 2 },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Produces `ids`, then receives each and nacks it as non-retryable with `error(id)`. */
async function deadLetters(queue: string, ids: string[], error: (id: string) => string = () => 'failed') {
  const q = queueApi(t, queue);
  await q.produce(ids.map((id) => ({ message_id: id, payload: id })));
  const got = await q.receiveAll(ids.length, 15_000);
  for (const m of got) await q.nack({ receipt: m.receipt, retryable: false, error: error(m.message_id) });
  expect((await q.stats()).dlq_depth).toBe(ids.length);
}

async function waitRedrive(queue: string, id: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await t.api(`/queues/${queue}/redrives/${id}`);
    if (res.body.status !== 'running' || Date.now() > deadline) return res.body;
    await sleep(50);
  }
}

describe('redrive', () => {
  it('moves dead letters at the requested rate: never faster (10 % + 1 message), not far slower', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `rate-${i}`);
    await deadLetters('rate', ids);
    // Slow enough that a loaded 2-core machine keeps up: this checks the limiter, not the machine.
    const rate = 4;
    const started = Date.now();
    const res = await t.api('/queues/rate/redrive', { body: { rate_per_sec: rate } });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'running' });
    const samples: { at: number; moved: number }[] = [];
    for (;;) {
      const job = (await t.api(`/queues/rate/redrives/${res.body.redrive_id}`)).body;
      samples.push({ at: (Date.now() - started) / 1000, moved: job.moved });
      if (job.status !== 'running') break;
      await sleep(100);
    }
    // Never ahead of the rate since the job started.
    for (const s of samples) expect(s.moved).toBeLessThanOrEqual(rate * s.at * 1.1 + 1);
    // The rate while it moved: from its first message to its last.
    const first = samples.find((s) => s.moved > 0) as { at: number; moved: number };
    const last = samples.find((s) => s.moved === 20) as { at: number; moved: number };
    const span = last.at - first.at;
    const measured = (last.moved - first.moved) / span;
    expect(measured).toBeLessThanOrEqual(rate * 1.1 + 1 / span);
    // Slower is the machine's share (a loaded CI machine can measure 3.2 a second for 4): half is a bug.
    expect(measured).toBeGreaterThanOrEqual(rate / 2);
    // They are back in the queue with a fresh attempt count and their history kept.
    const q = queueApi(t, 'rate');
    const back = await q.receiveAll(20, 15_000);
    expect(new Set(back.map((m) => m.message_id)).size).toBe(20);
    expect(back.every((m) => m.attempt === 1)).toBe(true);
    const trace = await t.api('/queues/rate/messages/rate-0');
    expect(trace.body.attempts).toHaveLength(1);
    expect(trace.body.events.map((e: { event: string }) => e.event)).toContain('redriven');
  }, 60_000);

  it('takes only the dead letters its filter matches', async () => {
    await deadLetters('filter', ['f-1', 'f-2', 'f-3', 'f-4'], (id) =>
      id === 'f-1' || id === 'f-3' ? 'upstream timeout' : 'parse error',
    );
    // Counted before one starts, and counting starts nothing.
    const matching = (filter: unknown) => t.api('/queues/filter/redrive/matching', { body: { filter } });
    expect((await matching({})).body).toEqual({ matching: 4 });
    expect((await matching({ error_contains: 'TIMEOUT' })).body).toEqual({ matching: 2 });
    expect((await matching({ message_ids: ['f-4', 'nobody'] })).body).toEqual({ matching: 1 });
    expect((await matching({ dead_after: 'yesterday' })).status).toBe(400);
    expect((await t.api('/queues/filter/stats')).body.dlq_depth).toBe(4);
    expect((await t.api('/queues/filter/audit')).body.entries).toEqual([]);
    // One bug or many: two of each.
    const byError = (await t.api('/queues/filter/dlq-errors')).body;
    expect(byError).toMatchObject({ grouped: 4, truncated: false });
    expect(byError.groups.map((g: { error: string; count: number }) => [g.error, g.count]).sort()).toEqual([
      ['parse error', 2],
      ['upstream timeout', 2],
    ]);
    expect(['f-1', 'f-3']).toContain(
      byError.groups.find((g: { error: string }) => g.error === 'upstream timeout').sample_message_id,
    );
    const res = await t.api('/queues/filter/redrive', {
      body: { rate_per_sec: 100, filter: { error_contains: 'TIMEOUT' } },
    });
    expect(res.body.remaining).toBe(2);
    const done = await waitRedrive('filter', res.body.redrive_id, 10_000);
    expect(done).toMatchObject({ status: 'done', moved: 2, remaining: 0 });
    const left = (await t.api('/queues/filter/dlq')).body.messages.map(
      (m: { message_id: string }) => m.message_id,
    );
    expect(left.sort()).toEqual(['f-2', 'f-4']);
    const byId = await t.api('/queues/filter/redrive', {
      body: { rate_per_sec: 100, filter: { message_ids: ['f-4'] } },
    });
    expect((await waitRedrive('filter', byId.body.redrive_id, 10_000)).moved).toBe(1);
    const before = new Date(Date.now() - 3_600_000).toISOString();
    const none = await t.api('/queues/filter/redrive', { body: { filter: { dead_before: before } } });
    expect(none.body).toMatchObject({ status: 'done', remaining: 0 });
  }, 40_000);

  it('stops when cancelled', async () => {
    await deadLetters(
      'cancel',
      Array.from({ length: 10 }, (_, i) => `c-${i}`),
    );
    const res = await t.api('/queues/cancel/redrive', { body: { rate_per_sec: 2 } });
    await sleep(1200);
    const cancelled = await t.api(`/queues/cancel/redrives/${res.body.redrive_id}`, { method: 'DELETE' });
    expect(cancelled.body.status).toBe('cancelled');
    expect(cancelled.body.moved).toBeLessThanOrEqual(4);
    // A pass already under way when the cancel landed may still finish its message.
    await sleep(1200);
    const later = (await t.api(`/queues/cancel/redrives/${res.body.redrive_id}`)).body;
    expect(later.status).toBe('cancelled');
    expect(later.moved - cancelled.body.moved).toBeLessThanOrEqual(1);
    await sleep(1200);
    expect((await t.api(`/queues/cancel/redrives/${res.body.redrive_id}`)).body.moved).toBe(later.moved);
    expect((await queueApi(t, 'cancel').stats()).dlq_depth).toBe(10 - later.moved);
    const audit = (await t.api('/queues/cancel/audit')).body.entries.map((e: { action: string }) => e.action);
    expect(audit).toEqual(['redrive_cancel', 'redrive']);
    expect((await t.api('/queues/cancel/redrives/no-such-id')).status).toBe(404);
  }, 30_000);

  it('rejects a bad redrive request with the path of the problem', async () => {
    const res = await t.api('/queues/rate/redrive', {
      body: { rate_per_sec: 0, filter: { dead_after: 'yesterday' } },
    });
    expect(res.status).toBe(400);
    const paths = res.body.error.details.issues.map((i: { path: string }) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['rate_per_sec', 'filter.dead_after']));
  });
});

describe('purge', () => {
  it('removes one dead letter, records who did it, and the trace says so', async () => {
    await deadLetters('purge', ['gone-1', 'kept-1']);
    const res = await t.api('/queues/purge/dlq/gone-1', { method: 'DELETE' });
    expect(res.status).toBe(204);
    expect((await t.api('/queues/purge/dlq/gone-1')).status).toBe(404);
    expect((await t.api('/queues/purge/dlq/gone-1', { method: 'DELETE' })).status).toBe(404);
    expect(
      (await t.api('/queues/purge/dlq')).body.messages.map((m: { message_id: string }) => m.message_id),
    ).toEqual(['kept-1']);
    const [entry] = (await t.api('/queues/purge/audit')).body.entries;
    expect(entry).toMatchObject({ action: 'purge', actor: 'local-admin', target: 'gone-1' });
    const trace = (await t.api('/queues/purge/messages/gone-1')).body;
    expect(trace.state).toBe('purged');
    expect(trace.events.map((e: { event: string }) => e.event)).toContain('purged');
  }, 30_000);
});

describe('message trace', () => {
  it('follows a message through produce, two failed attempts, the DLQ and a redrive', async () => {
    const q = queueApi(t, 'trace');
    await q.produce([{ message_id: 'tr-1', payload: 'x' }]);
    let trace = (await t.api('/queues/trace/messages/tr-1')).body;
    expect(trace.state).toBe('pending');
    expect(trace.shard).toMatch(/^shardId-/);
    expect(trace.sequence).toMatch(/^\d+$/);

    for (let attempt = 1; attempt <= 2; attempt++) {
      const [m] = await q.receiveAll(1, 8000, { consumer_id: `worker-${attempt}` });
      if (attempt === 1) expect((await t.api('/queues/trace/messages/tr-1')).body.state).toBe('leased');
      await q.nack({ receipt: m?.receipt, error: `failure ${attempt}` });
    }
    trace = (await t.api('/queues/trace/messages/tr-1')).body;
    expect(trace.state).toBe('dead');
    expect(
      trace.attempts.map((a: { attempt: number; consumer_id: string; error: string }) => [
        a.attempt,
        a.consumer_id,
        a.error,
      ]),
    ).toEqual([
      [1, 'worker-1', 'failure 1'],
      [2, 'worker-2', 'failure 2'],
    ]);

    const redrive = await t.api('/queues/trace/redrive', {
      body: { rate_per_sec: 50, filter: { message_ids: ['tr-1'] } },
    });
    await waitRedrive('trace', redrive.body.redrive_id, 10_000);
    const [again] = await q.receiveAll(1, 8000);
    expect(again?.attempt).toBe(1);
    await q.ack([again?.receipt as string]);
    trace = (await t.api('/queues/trace/messages/tr-1')).body;
    expect(trace.state).toBe('acked');
    const events = trace.events.map((e: { event: string }) => e.event);
    expect(events[0]).toBe('produced');
    for (const e of ['delivered', 'failed', 'dead_lettered', 'redriven', 'acked'])
      expect(events).toContain(e);
    expect(events.filter((e: string) => e === 'failed')).toHaveLength(2);
    const times = trace.events.map((e: { at: string }) => Date.parse(e.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect((await t.api('/queues/trace/messages/never-sent')).status).toBe(404);
  }, 40_000);
});
