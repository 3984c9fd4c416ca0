import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../functions/core/async.js';
import { ownStreamName } from '../../functions/core/config.js';
import { buildServices } from '../../functions/services.js';
import { queueApi, type Received } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * Replay by time (POST /queues/{q}/replay): the messages a queue accepted in a window, read back
 * from the log, delivered again as new deliveries; rate-limited, cancellable, audited, traced.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'replay',
    queues: {
      window: { shards: 2 },
      filtered: { shards: 1 },
      slow: { shards: 1 },
      ordered: { shards: 1, ordered: true },
      twice: { shards: 1 },
      retried: { shards: 1, max_attempts: 3, backoff_seconds: [0] },
      traced: { shards: 1 },
      doubled: { shards: 1 },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

/** Produces `ids` and acks every delivery of them: the consumer handled them (wrongly, say). */
async function handled(queue: string, ids: string[], key?: (id: string) => string): Promise<void> {
  await queueApi(t, queue).produce(
    ids.map((id) => ({ message_id: id, payload: { id }, ...(key ? { key: key(id) } : {}) })),
  );
  expect((await drain(queue, ids.length)).map((m) => m.message_id).sort()).toEqual([...ids].sort());
}

async function waitReplay(queue: string, id: string, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = (await t.api(`/queues/${queue}/replays/${id}`)).body;
    if (job.status !== 'running' || Date.now() > deadline) return job;
    await sleep(100);
  }
}

/**
 * Receives and acks as they come (an ordered queue gives a key's next message after the ack)
 * until `count` arrived, then a second longer, to see that nothing more comes. In delivery order.
 */
async function drain(queue: string, count: number): Promise<Received[]> {
  const q = queueApi(t, queue);
  const got: Received[] = [];
  const deadline = Date.now() + 15_000;
  let quiet = 0;
  while (Date.now() < deadline && (got.length < count || quiet === 0)) {
    const batch = await q.receive({ max_messages: 100, wait_seconds: 1 });
    if (got.length >= count && !batch.length) quiet++;
    got.push(...batch);
    if (batch.length) await q.ack(batch.map((m) => m.receipt));
  }
  return got;
}

const iso = (ms: number) => new Date(ms).toISOString();

describe('replay', () => {
  it('delivers again what the queue accepted in the window, as new deliveries, and nothing else', async () => {
    await handled('window', ['before-1']);
    await sleep(50);
    const from = Date.now();
    await handled(
      'window',
      Array.from({ length: 6 }, (_, i) => `in-${i}`),
    );
    const to = Date.now();
    await sleep(50);
    await handled('window', ['after-1']);
    const res = await t.api('/queues/window/replay', {
      body: { from: iso(from), to: iso(to), rate_per_sec: 100 },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({
      status: 'running',
      replayed: 0,
      shards: 2,
      from: iso(from),
      to: iso(to),
    });
    const done = await waitReplay('window', res.body.replay_id);
    expect(done).toMatchObject({ status: 'done', replayed: 6, shards_done: 2 });
    const again = await drain('window', 6);
    expect(again.map((m) => m.message_id).sort()).toEqual(Array.from({ length: 6 }, (_, i) => `in-${i}`));
    for (const m of again) {
      expect(m).toMatchObject({ attempt: 1, replay_id: res.body.replay_id, payload: { id: m.message_id } });
    }
    // The trace shows the replay; the audit trail who asked for it.
    const trace = (await t.api('/queues/window/messages/in-0')).body;
    expect(trace.events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ event: 'replayed', detail: { replay_id: res.body.replay_id } }),
      ]),
    );
    const audit = (await t.api('/queues/window/audit')).body.entries;
    expect(audit[0]).toMatchObject({
      action: 'replay',
      actor: 'local-admin',
      target: res.body.replay_id,
      detail: { from: iso(from), to: iso(to), rate_per_sec: 100 },
    });
  }, 60_000);

  it('takes only the messages its filter names, by id or by key', async () => {
    const from = Date.now();
    await handled('filtered', ['a-1', 'a-2', 'b-1', 'b-2', 'c-1'], (id) => id.slice(0, 1));
    const to = Date.now();
    const byKey = await t.api('/queues/filtered/replay', {
      body: { from: iso(from), to: iso(to), rate_per_sec: 100, filter: { keys: ['b'] } },
    });
    expect((await waitReplay('filtered', byKey.body.replay_id)).replayed).toBe(2);
    expect((await drain('filtered', 2)).map((m) => m.message_id).sort()).toEqual(['b-1', 'b-2']);
    const byId = await t.api('/queues/filtered/replay', {
      body: { from: iso(from), to: iso(to), rate_per_sec: 100, filter: { message_ids: ['c-1', 'a-2'] } },
    });
    const done = await waitReplay('filtered', byId.body.replay_id);
    // Every record of the window was read, the two named replayed.
    expect(done).toMatchObject({ replayed: 2, scanned: 5 });
    expect((await drain('filtered', 2)).map((m) => m.message_id).sort()).toEqual(['a-2', 'c-1']);
  }, 60_000);

  it('keeps to its rate, and stops when cancelled', async () => {
    const from = Date.now();
    await handled(
      'slow',
      Array.from({ length: 20 }, (_, i) => `s-${i}`),
    );
    const res = await t.api('/queues/slow/replay', { body: { from: iso(from), rate_per_sec: 2 } });
    await sleep(1600);
    const cancelled = await t.api(`/queues/slow/replays/${res.body.replay_id}`, { method: 'DELETE' });
    expect(cancelled.body.status).toBe('cancelled');
    // About 2 a second; a pass under way when the cancel landed may still finish its copies.
    expect(cancelled.body.replayed).toBeGreaterThanOrEqual(1);
    expect(cancelled.body.replayed).toBeLessThanOrEqual(5);
    await sleep(1500);
    const later = (await t.api(`/queues/slow/replays/${res.body.replay_id}`)).body;
    expect(later.replayed - cancelled.body.replayed).toBeLessThanOrEqual(2);
    await sleep(1200);
    expect((await t.api(`/queues/slow/replays/${res.body.replay_id}`)).body.replayed).toBe(later.replayed);
    expect((await drain('slow', later.replayed)).length).toBe(later.replayed);
    const audit = (await t.api('/queues/slow/audit')).body.entries.map((e: { action: string }) => e.action);
    expect(audit).toEqual(['replay_cancel', 'replay']);
  }, 30_000);

  it('keeps each key in order on an ordered queue', async () => {
    const from = Date.now();
    const ids = Array.from({ length: 8 }, (_, i) => `o-${i}`);
    await handled('ordered', ids, (id) => (Number(id.slice(2)) % 2 ? 'odd' : 'even'));
    const res = await t.api('/queues/ordered/replay', { body: { from: iso(from), rate_per_sec: 100 } });
    expect((await waitReplay('ordered', res.body.replay_id)).replayed).toBe(8);
    const seen = (await drain('ordered', 8)).map((m) => m.message_id);
    expect(seen).toHaveLength(8);
    for (const key of [0, 1]) {
      const ofKey = seen.filter((id) => Number(id.slice(2)) % 2 === key);
      expect(ofKey).toEqual(ids.filter((id) => Number(id.slice(2)) % 2 === key));
    }
  }, 40_000);

  it('delivers a copy appended twice (a crash before the job saved its place) once', async () => {
    await handled('twice', ['t-1']);
    const [record] = (await t.records('twice')).filter((r) => r.envelope.message_id === 't-1');
    const { requeue } = buildServices(t.runtime.config, t.runtime.clients);
    const now = Date.now();
    expect(await requeue.replay('twice', [record?.envelope as never], 'crashed-job', now)).toEqual([true]);
    expect(await requeue.replay('twice', [record?.envelope as never], 'crashed-job', now)).toEqual([true]);
    const got = await drain('twice', 1);
    expect(got.map((m) => [m.message_id, m.replay_id])).toEqual([['t-1', 'crashed-job']]);
    // Another replay of it is another delivery.
    await requeue.replay('twice', [record?.envelope as never], 'next-job', now);
    expect((await drain('twice', 1)).map((m) => m.replay_id)).toEqual(['next-job']);
  }, 30_000);

  it('counts a message its producer appended twice (a retry after a lost answer) once', async () => {
    const from = Date.now();
    await handled('doubled', ['d-1', 'd-2']);
    const [record] = (await t.records('doubled')).filter((r) => r.envelope.message_id === 'd-1');
    const { log } = buildServices(t.runtime.config, t.runtime.clients);
    // The retry's copy: in the log after the first, which admission took.
    const [again] = await log.append(ownStreamName('replay', 'doubled'), [
      { partitionKey: 'd-1', data: Buffer.from(JSON.stringify(record?.envelope)) },
    ]);
    expect(again?.ok).toBe(true);
    const res = await t.api('/queues/doubled/replay', {
      body: { from: iso(from), rate_per_sec: 100, filter: { message_ids: ['d-1', 'd-2'] } },
    });
    expect(await waitReplay('doubled', res.body.replay_id)).toMatchObject({ status: 'done', replayed: 2 });
    expect((await drain('doubled', 2)).map((m) => m.message_id).sort()).toEqual(['d-1', 'd-2']);
  }, 30_000);

  it('keeps a copy a replay through its retries, the DLQ and a redrive', async () => {
    const q = queueApi(t, 'retried');
    const from = Date.now();
    await handled('retried', ['nacked', 'expired', 'dead']);
    const res = await t.api('/queues/retried/replay', { body: { from: iso(from), rate_per_sec: 100 } });
    const replayId = res.body.replay_id;
    expect((await waitReplay('retried', replayId)).replayed).toBe(3);
    const first = await q.receiveAll(3, 10_000, { lease_seconds: 1 });
    const byId = new Map(first.map((m) => [m.message_id, m]));
    expect([...byId.keys()].sort()).toEqual(['dead', 'expired', 'nacked']);
    for (const m of first) expect(m).toMatchObject({ attempt: 1, replay_id: replayId });

    // A nack's retry waits in its range; an expired lease's goes through the message's item.
    expect((await q.nack({ receipt: byId.get('nacked')?.receipt, retry_after_seconds: 0 })).status).toBe(200);
    expect((await q.nack({ receipt: byId.get('dead')?.receipt, retryable: false })).body.status).toBe(
      'dead_lettered',
    );
    const again = await q.receiveAll(2, 15_000);
    expect(again.map((m) => [m.message_id, m.attempt, m.replay_id]).sort()).toEqual([
      ['expired', 2, replayId],
      ['nacked', 2, replayId],
    ]);
    await q.ack(again.map((m) => m.receipt));

    const dead = await t.api('/queues/retried/dlq/dead');
    expect(dead.body).toMatchObject({ message_id: 'dead', replay_id: replayId });
    expect((await t.api('/queues/retried/messages/dead')).body.replay_id).toBe(replayId);
    const redrive = await t.api('/queues/retried/redrive', {
      body: { rate_per_sec: 100, filter: { message_ids: ['dead'] } },
    });
    expect(redrive.status).toBe(202);
    const [back] = await q.receiveAll(1, 15_000);
    expect(back).toMatchObject({ message_id: 'dead', attempt: 1, replay_id: replayId });
    await q.ack([back?.receipt as string]);
  }, 60_000);

  it("traces a replayed message's latest life: its copy, leased and then acked, with its replay_id", async () => {
    const q = queueApi(t, 'traced');
    const from = Date.now();
    await handled('traced', ['copied']);
    const trace = async () => (await t.api('/queues/traced/messages/copied')).body;
    expect(await trace()).toMatchObject({ state: 'acked' });
    const res = await t.api('/queues/traced/replay', { body: { from: iso(from), rate_per_sec: 100 } });
    const replayId = res.body.replay_id;
    expect((await waitReplay('traced', replayId)).replayed).toBe(1);
    const [copy] = await q.receiveAll(1, 10_000);
    expect(copy).toMatchObject({ message_id: 'copied', replay_id: replayId });
    // Its original was acked before: an operator asking where the copy is must not be told that.
    expect(await trace()).toMatchObject({ state: 'leased', replay_id: replayId });
    await q.ack([copy?.receipt as string]);
    expect(await trace()).toMatchObject({ state: 'acked', replay_id: replayId });
  }, 60_000);

  it('refuses a window the log no longer keeps, or one that ends before it starts', async () => {
    const past = await t.api('/queues/window/replay', { body: { from: iso(Date.now() - 25 * 3_600_000) } });
    expect(past.status).toBe(400);
    expect(past.body.error.code).toBe('OUTSIDE_RETENTION');
    expect(past.body.error.message).toMatch(/the log keeps 24 h/);
    const backwards = await t.api('/queues/window/replay', {
      body: { from: iso(Date.now() - 60_000), to: iso(Date.now() - 120_000) },
    });
    expect(backwards.status).toBe(400);
    expect(backwards.body.error.code).toBe('INVALID_REQUEST');
    const bad = await t.api('/queues/window/replay', { body: { from: 'yesterday', rate_per_sec: 0 } });
    expect(bad.body.error.details.issues.map((i: { path: string }) => i.path).sort()).toEqual([
      'from',
      'rate_per_sec',
    ]);
    expect((await t.api('/queues/window/replays/no-such-id')).status).toBe(404);
  });
});
