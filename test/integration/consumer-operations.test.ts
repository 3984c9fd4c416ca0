import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../functions/core/async.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { calls, repaired } from '../fixtures/consumer-operations.js';
import { gaugedSweep } from '../helpers/gauged-sweep.js';
import { queueApi } from '../helpers/queue-api.js';
import type { ApiAnswer } from '../helpers/runtime.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { until } from '../helpers/until.js';

/**
 * The owner's tools on a Lambda consumer's own state (`?consumer=`): its DLQ, trace, redrive,
 * purge and stats, through the HTTP API of the local runtime, with two consumers of one queue
 * (test/fixtures/consumer-operations.ts).
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'push-ops',
    queues: {
      events: {
        shards: 1,
        backoff_seconds: [0],
        max_attempts: 2,
        consumers: [
          { name: 'billing', entry: 'test/fixtures/consumer-operations.ts', handler: 'billing' },
          { name: 'audit', entry: 'test/fixtures/consumer-operations.ts', handler: 'audit' },
        ],
      },
      jobs: { shards: 1 },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

const callsOf = (consumer: string, id: string) =>
  calls.filter((c) => c.consumer === consumer && c.message_id === id).map((c) => c.attempt);

/** GET, or another method, on an operations path of `events` for one consumer. */
const ofConsumer = (consumer: string, path: string, init: { method?: string; body?: unknown } = {}) =>
  t.api(`/queues/events/${path}${path.includes('?') ? '&' : '?'}consumer=${consumer}`, init);

const ok = (res: ApiAnswer, status = 200) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
};

const events = (trace: { events: { event: string }[] }) => trace.events.map((e) => e.event);

describe("a Lambda consumer's dead letters", () => {
  it('are its own: listed, traced, redriven back to it alone, and handled once after the fix', async () => {
    await queueApi(t, 'events').produce([
      { message_id: 'p-1', payload: { poison: ['billing', 'audit'] } },
      { message_id: 'p-2', payload: { poison: ['billing'] } },
      { message_id: 'ok-1', payload: {} },
    ]);
    await until(async () => {
      const found = await Promise.all([
        ofConsumer('billing', 'dlq/p-1'),
        ofConsumer('billing', 'dlq/p-2'),
        ofConsumer('audit', 'dlq/p-1'),
      ]);
      return found.every((res) => res.status === 200);
    });
    await t.runtime.eventSource.drained(15_000);
    expect([callsOf('billing', 'p-1'), callsOf('billing', 'p-2')]).toEqual([
      [1, 2],
      [1, 2],
    ]);
    expect([callsOf('audit', 'p-1'), callsOf('audit', 'p-2')]).toEqual([[1, 2], [1]]);

    const deadIds = (res: ApiAnswer) =>
      ok(res)
        .messages.map((m: { message_id: string }) => m.message_id)
        .sort();
    expect(deadIds(await ofConsumer('billing', 'dlq'))).toEqual(['p-1', 'p-2']);
    expect(deadIds(await ofConsumer('audit', 'dlq'))).toEqual(['p-1']);
    // None of them is the queue's own dead letter.
    expect(deadIds(await t.api('/queues/events/dlq'))).toEqual([]);
    expect((await t.api('/queues/events/dlq/p-1')).body.error.code).toBe('MESSAGE_NOT_FOUND');

    const dead = ok(await ofConsumer('billing', 'dlq/p-1'));
    expect(dead).toMatchObject({ message_id: 'p-1', payload: { poison: ['billing', 'audit'] } });
    expect(dead.attempts).toMatchObject([
      { attempt: 1, reason: 'nack', error: 'poison p-1', consumer_id: expect.stringMatching(/^billing\//) },
      { attempt: 2, reason: 'nack', error: 'poison p-1', consumer_id: expect.stringMatching(/^billing\//) },
    ]);
    const trace = ok(await ofConsumer('billing', 'messages/p-1'));
    expect(trace).toMatchObject({ message_id: 'p-1', state: 'dead', shard: expect.any(String) });
    expect(trace.sequence).toEqual(expect.any(String));
    expect(trace.attempts).toEqual(dead.attempts);
    expect(events(trace)).toEqual(
      expect.arrayContaining(['produced', 'delivered', 'failed', 'dead_lettered']),
    );
    expect(ok(await ofConsumer('audit', 'messages/p-2')).state).toBe('acked');

    repaired.add('billing');
    const started = ok(await ofConsumer('billing', 'redrive', { body: { rate_per_sec: 50 } }), 202);
    expect(started).toMatchObject({ status: 'running', remaining: 2 });
    // The job is the consumer's: the queue's own redrives do not have it.
    expect((await t.api(`/queues/events/redrives/${started.redrive_id}`)).status).toBe(404);
    await until(
      async () => ok(await ofConsumer('billing', `redrives/${started.redrive_id}`)).status === 'done',
    );
    expect(ok(await ofConsumer('billing', `redrives/${started.redrive_id}`))).toMatchObject({
      moved: 2,
      remaining: 0,
    });
    await until(async () => {
      const traces = await Promise.all(['p-1', 'p-2'].map((id) => ofConsumer('billing', `messages/${id}`)));
      return traces.every((res) => res.body.state === 'acked');
    });
    await t.runtime.eventSource.drained(15_000);

    // A fresh attempt count, once each. audit passed the redriven records over, though p-1 is
    // dead there too: billing's redrive is not audit's.
    expect([callsOf('billing', 'p-1'), callsOf('billing', 'p-2')]).toEqual([
      [1, 2, 1],
      [1, 2, 1],
    ]);
    expect([callsOf('audit', 'p-1'), callsOf('audit', 'p-2')]).toEqual([[1, 2], [1]]);
    expect(deadIds(await ofConsumer('audit', 'dlq'))).toEqual(['p-1']);
    expect(deadIds(await ofConsumer('billing', 'dlq'))).toEqual([]);
    const redriven = (await t.records('events')).filter((r) => r.envelope.message_id === 'p-1').at(-1);
    expect(redriven?.envelope).toMatchObject({ queue: 'events', for: 'billing', attempt: 1, entry: 3 });
    const after = ok(await ofConsumer('billing', 'messages/p-1'));
    expect(events(after)).toEqual(expect.arrayContaining(['redriven', 'acked']));
    expect(after.attempts).toHaveLength(2);

    const [entry] = ok(await t.api('/queues/events/audit')).entries;
    expect(entry).toMatchObject({
      action: 'redrive',
      consumer: 'billing',
      target: started.redrive_id,
      actor: 'local-admin',
    });
  });

  it('are purged and a redrive of them cancelled, each audited with the consumer', async () => {
    await queueApi(t, 'events').produce([{ message_id: 'f-1', payload: { fatal: ['billing', 'audit'] } }]);
    await until(async () => {
      const found = await Promise.all([ofConsumer('billing', 'dlq/f-1'), ofConsumer('audit', 'dlq/f-1')]);
      return found.every((res) => res.status === 200);
    });

    const slow = ok(await ofConsumer('billing', 'redrive', { body: { rate_per_sec: 0.01 } }), 202);
    const cancelled = ok(await ofConsumer('billing', `redrives/${slow.redrive_id}`, { method: 'DELETE' }));
    expect(cancelled).toMatchObject({ status: 'cancelled', moved: 0 });

    // The queue's own DLQ has no such message; the consumer's keeps it.
    expect((await t.api('/queues/events/dlq/f-1', { method: 'DELETE' })).status).toBe(404);
    expect(ok(await ofConsumer('billing', 'dlq/f-1', { method: 'DELETE' }), 204)).toBeUndefined();
    expect((await ofConsumer('billing', 'dlq/f-1')).body.error.code).toBe('MESSAGE_NOT_FOUND');
    expect((await ofConsumer('audit', 'dlq/f-1')).status).toBe(200);
    const trace = ok(await ofConsumer('billing', 'messages/f-1'));
    expect(trace.state).toBe('purged');
    expect(events(trace)).toContain('purged');

    const entries = ok(await t.api('/queues/events/audit')).entries.slice(0, 3);
    expect(entries.map((e: { action: string; consumer?: string; target: string }) => e)).toMatchObject([
      { action: 'purge', consumer: 'billing', target: 'f-1' },
      { action: 'redrive_cancel', consumer: 'billing', target: slow.redrive_id },
      { action: 'redrive', consumer: 'billing', target: slow.redrive_id },
    ]);
  });
});

describe("a Lambda consumer's RetryAfterError", () => {
  it('retries after the delay it asks for, not the queue tier (0 s here), for that consumer only', async () => {
    const started = Date.now();
    await queueApi(t, 'events').produce([
      { message_id: 'ra-1', payload: { retry_after: { consumer: 'billing', seconds: 2 } } },
    ]);
    await until(
      () => callsOf('billing', 'ra-1').length === 2 && callsOf('audit', 'ra-1').length === 1,
      20_000,
    );
    const retried = calls.filter((c) => c.consumer === 'billing' && c.message_id === 'ra-1');
    expect(retried.map((c) => c.attempt)).toEqual([1, 2]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    const trace = ok(await ofConsumer('billing', 'messages/ra-1'));
    expect(trace.attempts[0]).toMatchObject({ attempt: 1, error: 'billing is rate limited' });
  }, 30_000);
});

describe("a Lambda consumer's replay", () => {
  it('delivers the window again to that consumer alone, as new deliveries', async () => {
    const from = new Date().toISOString();
    await queueApi(t, 'events').produce([
      { message_id: 'rp-1', payload: {} },
      { message_id: 'rp-2', payload: {} },
    ]);
    await until(() =>
      ['billing', 'audit'].every((c) => callsOf(c, 'rp-1').length && callsOf(c, 'rp-2').length),
    );
    const to = new Date().toISOString();
    const started = ok(await ofConsumer('billing', 'replay', { body: { from, to, rate_per_sec: 100 } }), 202);
    await until(
      async () => ok(await ofConsumer('billing', `replays/${started.replay_id}`)).status === 'done',
    );
    expect(ok(await ofConsumer('billing', `replays/${started.replay_id}`)).replayed).toBe(2);
    await until(() => callsOf('billing', 'rp-1').length === 2 && callsOf('billing', 'rp-2').length === 2);
    expect([callsOf('billing', 'rp-1'), callsOf('billing', 'rp-2')]).toEqual([
      [1, 1],
      [1, 1],
    ]);
    await sleep(1500);
    expect([callsOf('audit', 'rp-1'), callsOf('audit', 'rp-2')]).toEqual([[1], [1]]);
    expect(callsOf('billing', 'rp-1')).toHaveLength(2);
    const audit = ok(await t.api('/queues/events/audit')).entries;
    expect(audit[0]).toMatchObject({ action: 'replay', consumer: 'billing', target: started.replay_id });
  }, 40_000);
});

describe("a Lambda consumer's stats", () => {
  it("count its own state, apart from the queue's and the other consumer's", async () => {
    const stats = async () => {
      const answers = await Promise.all([
        ofConsumer('billing', 'stats'),
        ofConsumer('audit', 'stats'),
        t.api('/queues/events/stats'),
      ]);
      return answers.map((res) => ok(res));
    };
    const [billing, audit, queue] = await stats();
    await queueApi(t, 'events').produce([{ message_id: 's-1', payload: { fatal: ['billing'] } }]);
    await until(async () => (await ofConsumer('billing', 'dlq/s-1')).status === 200);
    await until(() => callsOf('audit', 's-1').length === 1);
    await t.runtime.eventSource.drained(15_000);

    const [billingAfter, auditAfter, queueAfter] = await stats();
    expect(billingAfter).toEqual({
      consumer: 'billing',
      ready: 0,
      in_flight: 0,
      delayed: 0,
      held: 0,
      dlq_depth: billing.dlq_depth + 1,
      parked_keys: 0,
      dlq_oldest_age_seconds: expect.any(Number),
      nacked_total: billing.nacked_total + 1,
      dead_lettered_total: billing.dead_lettered_total + 1,
      expired_unprocessed_total: 0,
      commit_stalled_seconds: 0,
    });
    // audit handled s-1: nothing of its own changed but the age of what was already dead.
    expect(auditAfter).toEqual({ ...audit, dlq_oldest_age_seconds: expect.any(Number) });
    expect(auditAfter.dlq_oldest_age_seconds).toBeGreaterThanOrEqual(audit.dlq_oldest_age_seconds);
    // Without the parameter: the queue's own stats, as before.
    expect(queueAfter).toMatchObject({
      dlq_depth: 0,
      produced_total: queue.produced_total + 1,
      storage_quota_bytes: expect.any(Number),
    });
  });
});

describe("a Lambda consumer's gauges", () => {
  it("are recorded by the sweep under the consumer's namespace, as its stats count them", async () => {
    const { lines, sweep } = gaugedSweep(t);
    const stats = ok(await ofConsumer('billing', 'stats'));
    expect(stats.dlq_depth).toBeGreaterThan(0);
    await sweep({}, lambdaContext('sweep', 1));
    const line = lines.find((l) => l.queue === 'events~billing');
    expect(line).toMatchObject({ dlq_depth: stats.dlq_depth });
    expect(line?.dlq_oldest_age).toBeGreaterThanOrEqual(stats.dlq_oldest_age_seconds);
    // A namespace whose gauges are all 0 writes no line, and every line names its namespace.
    for (const l of lines) {
      expect(l.queue).toEqual(expect.any(String));
      expect(Object.entries(l).some(([name, value]) => name !== 'queue' && value !== 0)).toBe(true);
    }
  });
});

describe('the consumer parameter', () => {
  it('names a consumer the queue declares: 404 CONSUMER_NOT_FOUND otherwise, 400 for another shape', async () => {
    for (const [queue, consumer] of [
      ['events', 'nobody'],
      // Declared, but on another queue.
      ['jobs', 'billing'],
    ]) {
      const res = await t.api(`/queues/${queue}/dlq?consumer=${consumer}`);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({
        code: 'CONSUMER_NOT_FOUND',
        message: `queue "${queue}" has no consumer named "${consumer}"`,
      });
    }
    const bad = await t.api('/queues/events/stats?consumer=Billing~x');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({
      code: 'INVALID_REQUEST',
      details: { issues: [{ path: 'consumer' }] },
    });
    expect((await t.api('/queues/nowhere/dlq?consumer=billing')).body.error.code).toBe('QUEUE_NOT_FOUND');
  });
});
