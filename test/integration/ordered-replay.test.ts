import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogRecord } from '../../functions/admission/range-admission.js';
import { buildServices } from '../../functions/services.js';
import { queueApi, type Received } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * An ordered queue's admitter that read the shard's last range before another admitted the same
 * run replays what the keys say was decided (admission/key-sequencer.ts). By the time it does,
 * the run's messages may have been delivered, acked or failed: what it writes then must not bring
 * any of them back. Produce's fast path racing dispatch makes such late replays common.
 */

let t: TestRuntime;

beforeAll(async () => {
  // Dispatch reads a shard once, at start, and then idles a minute: this test admits by hand.
  t = await startTestRuntime(
    {
      tenant: 'replay',
      queues: {
        held: { shards: 1, ordered: true, fast_admission: 'off' },
        failed: { shards: 1, ordered: true, fast_admission: 'off', backoff_seconds: [0] },
      },
    },
    'test-admin-key-0123456789',
    { sweepIntervalMs: 60_000, idlePollMs: 60_000, wakePollers: false },
  );
}, 60_000);

afterAll(async () => {
  await t?.close();
});

async function logOf(queue: string): Promise<{ shard: string; log: LogRecord[] }> {
  const records = await t.records(queue);
  return {
    shard: records[0]?.shardId as string,
    log: records.map((r) => ({ sequence: r.sequenceNumber, envelope: r.envelope })),
  };
}

/** Admits what the log holds after the shard's last range, as dispatch would. */
async function admitAll(queue: string): Promise<void> {
  const { admission } = buildServices(t.runtime.config, t.runtime.clients);
  const { shard, log } = await logOf(queue);
  const config = t.runtime.config.tenant.queues[queue];
  if (!config) throw new Error(`no queue ${queue}`);
  await admission.catchUp(queue, config, shard, async (after) =>
    log.slice(after === undefined ? 0 : log.findIndex((r) => r.sequence === after) + 1),
  );
}

/**
 * An admitter that reads the shard's last range now and the log only when `go` resolves: the
 * replay of a run another admitter wrote meanwhile.
 */
async function lateAdmitter(queue: string, go: Promise<void>): Promise<unknown> {
  const { admission } = buildServices(t.runtime.config, t.runtime.clients);
  const { shard, log } = await logOf(queue);
  const config = t.runtime.config.tenant.queues[queue];
  if (!config) throw new Error(`no queue ${queue}`);
  return admission.catchUp(queue, config, shard, async () => {
    await go;
    return log;
  });
}

function gate(): { go: Promise<void>; open: () => void } {
  const opened: (() => void)[] = [];
  const go = new Promise<void>((resolve) => opened.push(resolve));
  return {
    go,
    open: () => {
      for (const resolve of opened) resolve();
    },
  };
}

/** Whatever the queue still delivers after a few sweep passes and admissions: nothing, here. */
async function deliveredLater(queue: string): Promise<Received[]> {
  const q = queueApi(t, queue);
  const got: Received[] = [];
  for (let pass = 0; pass < 3; pass++) {
    await t.runtime.sweep.fire();
    await admitAll(queue);
    got.push(...(await q.receive({ max_messages: 10, wait_seconds: 1 })));
  }
  return got;
}

/**
 * Two messages of one key produced, the late admitter waiting, and the run admitted by another:
 * the first is the key's head, the second in its hold area. `replay()` lets the late one go on.
 */
async function keyWithLateReplay(queue: string, ids: [string, string], key: string) {
  await queueApi(t, queue).produce(ids.map((message_id, n) => ({ message_id, key, payload: { n } })));
  const late = gate();
  const replaying = lateAdmitter(queue, late.go);
  await admitAll(queue);
  return {
    replay: async () => {
      late.open();
      await replaying;
    },
  };
}

describe('a late replay of an ordered queue run', () => {
  it('does not bring back a held message that was delivered from its key hold area and acked', async () => {
    const q = queueApi(t, 'held');
    const { replay } = await keyWithLateReplay('held', ['a', 'x'], 'k');
    const [a] = await q.receive({ max_messages: 10, wait_seconds: 1 });
    expect(a?.message_id).toBe('a');
    expect(await q.ack([a?.receipt as string])).toEqual([{ receipt: a?.receipt, status: 'acked' }]);
    // x comes from the key's hold area and holds the key while the late admitter replays the run.
    const [x] = await q.receive({ max_messages: 10, wait_seconds: 1 });
    expect(x?.message_id).toBe('x');
    await replay();
    expect(await q.ack([x?.receipt as string])).toEqual([{ receipt: x?.receipt, status: 'acked' }]);
    expect((await deliveredLater('held')).map((m) => m.message_id)).toEqual([]);
  });

  it('does not deliver again a head that failed and whose retry was acked', async () => {
    const q = queueApi(t, 'failed');
    const { replay } = await keyWithLateReplay('failed', ['a', 'x'], 'k');
    const [a] = await q.receive({ max_messages: 10, wait_seconds: 1 });
    expect(a?.message_id).toBe('a');
    expect((await q.nack({ receipt: a?.receipt, retryable: true, error: 'once' })).status).toBe(200);
    // The retry re-enters the log and becomes the key's head; then it and x are handled.
    await t.runtime.sweep.fire();
    await admitAll('failed');
    const handled: Received[] = [];
    for (let i = 0; i < 4 && handled.length < 2; i++) {
      const got = await q.receive({ max_messages: 10, wait_seconds: 1 });
      if (got.length) await q.ack(got.map((m) => m.receipt));
      handled.push(...got);
    }
    expect(handled.map((m) => [m.message_id, m.attempt])).toEqual([
      ['a', 2],
      ['x', 1],
    ]);
    await replay();
    expect((await deliveredLater('failed')).map((m) => [m.message_id, m.attempt])).toEqual([]);
  });

  it('does not deliver again a held message whose delivery failed and whose retry was acked', async () => {
    const q = queueApi(t, 'failed');
    const { replay } = await keyWithLateReplay('failed', ['b', 'y'], 'k2');
    const [b] = await q.receive({ max_messages: 10, wait_seconds: 1 });
    expect(b?.message_id).toBe('b');
    await q.ack([b?.receipt as string]);
    const [y] = await q.receive({ max_messages: 10, wait_seconds: 1 });
    expect(y?.message_id).toBe('y');
    expect((await q.nack({ receipt: y?.receipt, retryable: true, error: 'once' })).status).toBe(200);
    await t.runtime.sweep.fire();
    await admitAll('failed');
    const [retry] = await q.receive({ max_messages: 10, wait_seconds: 1 });
    expect([retry?.message_id, retry?.attempt]).toEqual(['y', 2]);
    await q.ack([retry?.receipt as string]);
    await replay();
    expect((await deliveredLater('failed')).map((m) => [m.message_id, m.attempt])).toEqual([]);
  });
});
