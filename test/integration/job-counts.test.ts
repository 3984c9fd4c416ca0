import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CallFault } from '../../functions/aws/faults.js';
import { redriveKey, replayKey } from '../../functions/store/keys.js';
import { runJob } from '../helpers/jobs.js';
import { queueApi, type Received } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * Redrive and replay jobs count what they move once: a pass that stops between moving a batch and
 * saving it leaves the next pass to count it, and a progress write whose answer was lost (it
 * landed) is not counted again when the SDK sends it again. The sweep runs only when fired here.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime(
    {
      tenant: 'jobcounts',
      queues: {
        stopped: { shards: 1 },
        lost: { shards: 1 },
        untraced: { shards: 1 },
        replayed: { shards: 1 },
        retold: { shards: 1 },
      },
    },
    undefined,
    { sweepIntervalMs: 60_000, idlePollMs: 20 },
  );
});
afterEach(() => {
  t.faults.clear();
});
afterAll(async () => {
  await t?.close();
});

/**
 * A fault on the writes of a job's item that `writes` picks (by its expression and names): the
 * `times` first of them. It does not know how the job saves its progress, only what a write says.
 */
function onJobWrite(pk: string, writes: RegExp, fault: Omit<CallFault, 'match'>, times: number): CallFault {
  let left = times;
  return {
    ...fault,
    match: (operation, input) => {
      const i = input as { Key?: { pk?: string } };
      if (operation !== 'DynamoDB.UpdateItem' || i.Key?.pk !== pk || left <= 0) return false;
      if (!writes.test(JSON.stringify(input))) return false;
      left--;
      return true;
    },
  };
}

/** A write that counts what moved, and one that saves a replay's place in the log. */
const COUNTS = /ADD/;
const PLACE = /"cursors"/;

async function deadLetters(queue: string, n: number): Promise<void> {
  const q = queueApi(t, queue);
  await q.produce(Array.from({ length: n }, (_, i) => ({ message_id: `${queue}-${i}`, payload: i })));
  const got = await q.receiveAll(n, 15_000);
  for (const m of got) await q.nack({ receipt: m.receipt, retryable: false, error: 'failed' });
  expect((await q.stats()).dlq_depth).toBe(n);
}

async function drain(queue: string): Promise<Received[]> {
  const q = queueApi(t, queue);
  const got: Received[] = [];
  for (let quiet = 0; quiet < 2; ) {
    const batch = await q.receive({ max_messages: 100, wait_seconds: 1 });
    got.push(...batch);
    if (batch.length) await q.ack(batch.map((m) => m.receipt));
    quiet = batch.length ? 0 : quiet + 1;
  }
  return got;
}

describe('a redrive', () => {
  it('counts a batch once when its pass stops after moving it, before saving it', async () => {
    await deadLetters('stopped', 10);
    const { redrive_id: id } = (await t.api('/queues/stopped/redrive', { body: { rate_per_sec: 1000 } }))
      .body;
    // Every try of every write that counts fails: the pass ends with its batch moved, uncounted.
    t.faults.callFault = onJobWrite(
      redriveKey('stopped', id).pk,
      COUNTS,
      { errorName: 'InternalServerError' },
      10,
    );
    await t.runtime.sweep.fire();
    expect((await queueApi(t, 'stopped').stats()).dlq_depth).toBe(0);
    t.faults.clear();
    expect(await runJob(t, `/queues/stopped/redrives/${id}`)).toMatchObject({
      status: 'done',
      moved: 10,
      remaining: 0,
    });
    expect((await drain('stopped')).map((m) => m.message_id).sort()).toHaveLength(10);
  }, 60_000);

  it('counts a batch once when the answer to its progress write is lost and the SDK sends it again', async () => {
    await deadLetters('lost', 10);
    const { redrive_id: id } = (await t.api('/queues/lost/redrive', { body: { rate_per_sec: 1000 } })).body;
    t.faults.callFault = onJobWrite(
      redriveKey('lost', id).pk,
      COUNTS,
      { errorName: 'InternalServerError', answerLost: true },
      1,
    );
    expect(await runJob(t, `/queues/lost/redrives/${id}`)).toMatchObject({
      status: 'done',
      moved: 10,
      remaining: 0,
    });
    expect(t.faults.injected).toBeGreaterThan(0);
    expect(await drain('lost')).toHaveLength(10);
  }, 60_000);

  it('leaves its redriven event on each message of a batch whose pass stopped before writing them, once', async () => {
    await deadLetters('untraced', 6);
    const { redrive_id: id } = (await t.api('/queues/untraced/redrive', { body: { rate_per_sec: 1000 } }))
      .body;
    // The pass moves its batch, then stops at its trace events: some written, the rest not.
    let written = 0;
    t.faults.callFault = {
      errorName: 'InternalServerError',
      match: (operation, input) =>
        operation === 'DynamoDB.PutItem' && /#redriven"/.test(JSON.stringify(input)) && ++written > 2,
    };
    await t.runtime.sweep.fire();
    expect((await queueApi(t, 'untraced').stats()).dlq_depth).toBe(0);
    t.faults.clear();
    expect(await runJob(t, `/queues/untraced/redrives/${id}`)).toMatchObject({ status: 'done', moved: 6 });
    for (let i = 0; i < 6; i++) {
      const { events } = (await t.api(`/queues/untraced/messages/untraced-${i}`)).body;
      const redriven = events.filter((e: { event: string }) => e.event === 'redriven');
      expect(redriven, `untraced-${i}`).toEqual([expect.objectContaining({ detail: { redrive_id: id } })]);
    }
    expect(await drain('untraced')).toHaveLength(6);
  }, 60_000);
});

describe('a replay', () => {
  async function handled(queue: string, n: number): Promise<{ from: string; to: string }> {
    const from = new Date(Date.now() - 1000).toISOString();
    await queueApi(t, queue).produce(
      Array.from({ length: n }, (_, i) => ({ message_id: `${queue}-${i}`, payload: i })),
    );
    expect(await drain(queue)).toHaveLength(n);
    return { from, to: new Date().toISOString() };
  }

  it('counts its copies once when its pass stops before saving where it is, and delivers each once', async () => {
    const window = await handled('replayed', 8);
    const { replay_id: id } = (
      await t.api('/queues/replayed/replay', { body: { ...window, rate_per_sec: 1000 } })
    ).body;
    // Every try of every write that saves its place fails: the pass ends with its copies appended.
    t.faults.callFault = onJobWrite(
      replayKey('replayed', id).pk,
      PLACE,
      { errorName: 'InternalServerError' },
      10,
    );
    await t.runtime.sweep.fire();
    t.faults.clear();
    expect(await runJob(t, `/queues/replayed/replays/${id}`)).toMatchObject({ status: 'done', replayed: 8 });
    const copies = await drain('replayed');
    expect(copies.map((m) => m.message_id).sort()).toEqual(
      Array.from({ length: 8 }, (_, i) => `replayed-${i}`).sort(),
    );
  }, 60_000);

  it('counts its copies once when the answer to its progress write is lost', async () => {
    const window = await handled('retold', 8);
    const { replay_id: id } = (
      await t.api('/queues/retold/replay', { body: { ...window, rate_per_sec: 1000 } })
    ).body;
    t.faults.callFault = onJobWrite(
      replayKey('retold', id).pk,
      COUNTS,
      { errorName: 'InternalServerError', answerLost: true },
      1,
    );
    expect(await runJob(t, `/queues/retold/replays/${id}`)).toMatchObject({ status: 'done', replayed: 8 });
    expect(t.faults.injected).toBeGreaterThan(0);
    expect(await drain('retold')).toHaveLength(8);
  }, 60_000);
});
