import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type LeaseqClient, Worker } from '../../client/index.js';
import { PAUSE_CHECK_MS } from '../../functions/store/queue-controls.js';
import type { ChannelFrame } from '../../functions/wire/channel.js';
import { placesHeld, wakeRegistrations } from '../helpers/queue-items.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { clientOf, sleep, until, workerPool } from './support.js';

/**
 * The wake channel (docs/wake-channel.md) against a real local runtime: its WebSocket gateway
 * plays API Gateway's, and admissions post wakes through its management endpoint over HTTP, as
 * on AWS. A Worker on the channel receives without waiting, so only a wake brings it back before
 * its `waitSeconds` (20 s here) ends.
 */

let t: TestRuntime;
let client: LeaseqClient;
const pool = workerPool(() => client);

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'wake',
    queues: {
      jobs: { shards: 2 },
      other: { shards: 1 },
      crowded: { shards: 1, max_waiting_receives: 1 },
      metered: { shards: 1, rate_limits: { consume: { bytes_per_sec: 100_000 } } },
    },
  });
  client = clientOf(t, { channelUrl: t.runtime.channelUrl });
});
afterEach(async () => {
  await pool.stopAll();
});
afterAll(async () => {
  await t?.close();
});

const registrations = (queue: string) => wakeRegistrations(t, queue);
const placesHeldBy = (queue: string) => placesHeld(t, queue);

/** The receipts of the messages wakes handed a connection. */
function handedReceipts(frames: readonly ChannelFrame[]): string[] {
  return frames.flatMap((f) => (f.type === 'admitted' ? (f.messages ?? []).map((m) => m.receipt) : []));
}

/** A raw connection, as a client other than the Worker would use it. */
async function connect(key: string | null = t.runtime.adminKey) {
  const ws = new WebSocket(t.runtime.channelUrl, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  const frames: ChannelFrame[] = [];
  ws.on('message', (data) => frames.push(JSON.parse(String(data)) as ChannelFrame));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ action: 'hello' }));
  await until('the hello answer', () => frames.some((f) => f.type === 'hello'));
  const hello = frames.find((f) => f.type === 'hello') as { connection_id: string };
  return { ws, frames, id: hello.connection_id };
}

describe('the wake channel', () => {
  it('a receive that answers nothing registers its connection; the next admission takes it and wakes it', async () => {
    const { ws, frames, id } = await connect();
    try {
      const empty = await t.api('/queues/other/receive', { body: { wait_seconds: 0, wake_connection: id } });
      expect(empty.status).toBe(200);
      expect(empty.body.messages).toEqual([]);
      expect(await registrations('other')).toEqual([id]);

      await t.api('/queues/other/messages', { body: { messages: [{ payload: 1 }] } });
      await until('the wake', () => frames.some((f) => f.type === 'admitted'));
      // The wake carries the message, leased to the connection's receive as it would have answered it.
      const wakes = frames.filter((f) => f.type === 'admitted');
      expect(wakes).toMatchObject([
        { type: 'admitted', queue: 'other', messages: [{ payload: 1, attempt: 1 }] },
      ]);
      expect(await registrations('other')).toEqual([]);
      const again = await t.api('/queues/other/receive', { body: { wait_seconds: 0 } });
      expect(again.body.messages).toEqual([]);

      const acked = await t.api('/queues/other/ack', { body: { receipts: handedReceipts(wakes) } });
      expect(acked.body.results).toMatchObject([{ status: 'acked' }]);
    } finally {
      ws.close();
    }
  });

  it('an admission wakes the oldest registrations that cover its entries, not every one', async () => {
    const first = await connect();
    const second = await connect();
    try {
      await t.api('/queues/other/receive', { body: { max_messages: 2, wake_connection: first.id } });
      // Registered a few milliseconds apart, so "oldest" is not a tie.
      await sleep(10);
      await t.api('/queues/other/receive', { body: { max_messages: 2, wake_connection: second.id } });
      expect((await registrations('other')).sort()).toEqual([first.id, second.id].sort());

      // One new message: the older registration covers it, the other waits on.
      await t.api('/queues/other/messages', { body: { messages: [{ payload: 'one' }] } });
      await until('the first wake', () => first.frames.some((f) => f.type === 'admitted'));
      expect(await registrations('other')).toEqual([second.id]);
      expect(second.frames.filter((f) => f.type === 'admitted')).toEqual([]);

      expect(first.frames.filter((f) => f.type === 'admitted')).toMatchObject([
        { messages: [{ payload: 'one' }] },
      ]);
      await t.api('/queues/other/ack', { body: { receipts: handedReceipts(first.frames) } });
      // The next admission reaches the one left.
      await t.api('/queues/other/messages', { body: { messages: [{ payload: 'two' }] } });
      await until('the second wake', () => second.frames.some((f) => f.type === 'admitted'));
      expect(second.frames.filter((f) => f.type === 'admitted')).toMatchObject([
        { messages: [{ payload: 'two' }] },
      ]);
      await t.api('/queues/other/ack', { body: { receipts: handedReceipts(second.frames) } });
    } finally {
      first.ws.close();
      second.ws.close();
    }
  });

  it('a long poll refused a place to wait registers its connection as it answers', async () => {
    const conns = await Promise.all([connect(), connect(), connect()]);
    try {
      const answers: (unknown[] | undefined)[] = [undefined, undefined, undefined];
      const polls = conns.map(({ id }, i) =>
        t
          .api('/queues/crowded/receive', {
            body: { max_messages: 1, wait_seconds: 20, wake_connection: id },
          })
          .then((r) => {
            answers[i] = r.body.messages;
          }),
      );
      // One place an epoch (half of max_waiting_receives, rounded up; a wait spans two epochs at
      // most): the receives that find none answer empty long before their deadline, and nothing
      // has been produced yet.
      await until(
        'each answered or waiting in a place',
        async () => answers.filter(Boolean).length + (await placesHeldBy('crowded')) === conns.length,
        15_000,
      );
      const refused = conns.filter((_, i) => answers[i] !== undefined).map((c) => c.id);
      expect(refused.length).toBeGreaterThanOrEqual(1);
      expect(answers.filter((a) => a !== undefined).every((a) => a?.length === 0)).toBe(true);
      expect((await registrations('crowded')).sort()).toEqual(refused.sort());

      // Each waiting poll is handed one (in this process); the one left goes to a refused one, on its wake.
      const waiting = conns.length - refused.length;
      await t.api('/queues/crowded/messages', {
        body: { messages: Array.from({ length: waiting + 1 }, (_, i) => ({ payload: i })) },
      });
      await until('the refused connections woken', () =>
        conns.filter((c) => refused.includes(c.id)).some((c) => c.frames.some((f) => f.type === 'admitted')),
      );
      await Promise.all(polls);
      const got = [
        ...answers.flatMap((a) => (a ?? []) as { receipt: string }[]),
        ...conns.flatMap((c) => handedReceipts(c.frames).map((receipt) => ({ receipt }))),
      ];
      const rest = (await t.api('/queues/crowded/receive', { body: { max_messages: 10, wait_seconds: 5 } }))
        .body.messages as { receipt: string }[];
      expect(got.length + rest.length).toBe(waiting + 1);
      await t.api('/queues/crowded/ack', { body: { receipts: [...got, ...rest].map((m) => m.receipt) } });
    } finally {
      for (const c of conns) c.ws.close();
    }
  });

  it('a receive that finds messages registers nothing', async () => {
    const { ws, id } = await connect();
    try {
      await t.api('/queues/other/messages', { body: { messages: [{ payload: 2 }] } });
      let got: { receipt: string }[] = [];
      await until('the message', async () => {
        got = (await t.api('/queues/other/receive', { body: { wait_seconds: 0, wake_connection: id } })).body
          .messages;
        return got.length > 0;
      });
      // The empty looks before it registered; the one that found the message did not add to them.
      const before = await registrations('other');
      await t.api('/queues/other/ack', { body: { receipts: got.map((m) => m.receipt) } });
      expect(await registrations('other')).toEqual(before);
    } finally {
      ws.close();
    }
  });

  it('a wake to a connection that closed is dropped, and the message is delivered all the same', async () => {
    const { ws, id } = await connect();
    await t.api('/queues/other/receive', { body: { wait_seconds: 0, wake_connection: id } });
    ws.close();
    await until('the connection closed', () => ws.readyState === WebSocket.CLOSED);
    const produced = await t.api('/queues/other/messages', { body: { messages: [{ payload: 3 }] } });
    expect(produced.status).toBe(200);
    await until('the registration taken', async () => (await registrations('other')).length === 0);
    // Leased to the closed connection's receive, then given back at once: no attempt used.
    const got = await t.api('/queues/other/receive', { body: { wait_seconds: 5 } });
    expect(got.body.messages).toMatchObject([{ payload: 3, attempt: 1 }]);
    await t.api('/queues/other/ack', { body: { receipts: [got.body.messages[0].receipt] } });
  });

  it('a paused queue wakes its receivers without handing them anything', async () => {
    const { ws, frames, id } = await connect();
    try {
      await client.pause('other', 'the wake test');
      // Every instance reads a pause within a second (dispatch's, which may admit, as well).
      await sleep(PAUSE_CHECK_MS);
      await t.api('/queues/other/receive', { body: { wait_seconds: 0, wake_connection: id } });
      await t.api('/queues/other/messages', { body: { messages: [{ payload: 'paused' }] } });
      await until('the wake', () => frames.some((f) => f.type === 'admitted'));
      expect(frames.filter((f) => f.type === 'admitted')).toEqual([{ type: 'admitted', queue: 'other' }]);
      expect((await t.api('/queues/other/receive', { body: { wait_seconds: 0 } })).body.messages).toEqual([]);
    } finally {
      ws.close();
      await client.resume('other');
    }
    const got = await t.api('/queues/other/receive', { body: { wait_seconds: 5 } });
    expect(got.body.messages).toMatchObject([{ payload: 'paused', attempt: 1 }]);
    await t.api('/queues/other/ack', { body: { receipts: [got.body.messages[0].receipt] } });
  });

  it("the client's channel keeps what a wake handed it until taken, once", async () => {
    const channel = client.openWakeChannel();
    if (!channel) throw new Error('the client has a channelUrl');
    try {
      const id = await channel.ready(5000);
      const since = channel.seen('other');
      await t.api('/queues/other/receive', { body: { wait_seconds: 0, wake_connection: id } });
      await t.api('/queues/other/messages', { body: { messages: [{ payload: 'kept' }] } });
      expect(await channel.wait('other', since, 10_000)).toBe(true);
      const handed = channel.handed('other');
      expect(handed).toMatchObject([{ payload: 'kept', attempt: 1 }]);
      expect(channel.handed('other')).toEqual([]);
      expect(
        await client.ack(
          'other',
          handed.map((m) => m.receipt),
        ),
      ).toMatchObject([{ status: 'acked' }]);
    } finally {
      channel.close();
    }
  });

  it('a receive that spends a byte quota per answer is woken, not handed', async () => {
    const { ws, frames, id } = await connect();
    try {
      await t.api('/queues/metered/receive', { body: { wait_seconds: 0, wake_connection: id } });
      await t.api('/queues/metered/messages', { body: { messages: [{ payload: 'metered' }] } });
      await until('the wake', () => frames.some((f) => f.type === 'admitted'));
      expect(frames.filter((f) => f.type === 'admitted')).toEqual([{ type: 'admitted', queue: 'metered' }]);
      const got = await t.api('/queues/metered/receive', { body: { wait_seconds: 5 } });
      expect(got.body.messages).toMatchObject([{ payload: 'metered', attempt: 1 }]);
      await t.api('/queues/metered/ack', { body: { receipts: [got.body.messages[0].receipt] } });
    } finally {
      ws.close();
    }
  });

  it('refuses a connection without a valid key, a malformed frame and a malformed connection id', async () => {
    await expect(connect('not-a-key')).rejects.toThrow(/401/);
    await expect(connect(null)).rejects.toThrow(/401/);

    const { ws, frames } = await connect();
    try {
      ws.send('{"action":"subscribe"}');
      ws.send(JSON.stringify({ action: 'ping' }));
      await until('two answers', () => frames.length >= 3);
      expect(frames[1]).toMatchObject({ type: 'error', code: 'INVALID_REQUEST' });
      expect(frames[2]).toEqual({ type: 'pong' });
    } finally {
      ws.close();
    }
    const bad = await t.api('/queues/other/receive', { body: { wake_connection: 'not an id!' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_REQUEST');
  });

  it('an idle Worker waits on the channel and is woken by an admission long before its wait ends', async () => {
    const handled: unknown[] = [];
    const { worker, errors } = pool.start({
      queue: 'jobs',
      waitSeconds: 20,
      handler: async (m) => {
        handled.push(m.payload);
      },
    });
    await until('the worker idle on the channel', async () => (await registrations('jobs')).length > 0);
    const idleSince = Date.now();
    await client.produce('jobs', [{ payload: 'woken' }]);
    await until('the message handled', () => handled.length === 1, 10_000);
    // Without the wake its next look was 20 s after it went idle.
    expect(Date.now() - idleSince).toBeLessThan(10_000);
    expect(handled).toEqual(['woken']);

    // API Gateway closes a connection after 2 hours (DeleteConnection here): the Worker connects
    // again, registers the new connection, and is woken on it.
    await until('idle again', async () => (await registrations('jobs')).length > 0);
    const [old] = await registrations('jobs');
    const deleted = await fetch(
      `${t.runtime.config.channelEndpoint}/@connections/${encodeURIComponent(old as string)}`,
      {
        method: 'DELETE',
      },
    );
    expect(deleted.status).toBe(204);
    // The old registration stays until an admission finds its connection gone (410) and wakes the
    // next one in its place.
    // The Worker reconnects with backoff: on a loaded machine (the DynamoDB Local pass) that can
    // pass the 10 s default.
    await until(
      'registered again on a new connection',
      async () => (await registrations('jobs')).some((id) => id !== old),
      30_000,
    );
    const reconnectedAt = Date.now();
    await client.produce('jobs', [{ payload: 'after' }]);
    await until('the message handled', () => handled.length === 2, 10_000);
    expect(Date.now() - reconnectedAt).toBeLessThan(10_000);

    // Waiting on the channel holds no request and no lease: a stop ends it at once.
    await until('idle again', async () => (await registrations('jobs')).length > 0);
    const stopping = Date.now();
    await worker.stop({ timeoutMs: 30_000 });
    expect(Date.now() - stopping).toBeLessThan(10_000);
    expect(handled).toEqual(['woken', 'after']);
    expect(errors).toEqual([]);
  });

  it('a Worker whose channel cannot connect long-polls as it does without one', async () => {
    const unreachable = clientOf(t, { channelUrl: 'ws://127.0.0.1:9/' });
    const handled: unknown[] = [];
    const worker = new Worker({
      client: unreachable,
      queue: 'jobs',
      waitSeconds: 1,
      handler: async (m) => {
        handled.push(m.payload);
      },
    });
    worker.start();
    try {
      await client.produce('jobs', [{ payload: 'polled' }]);
      await until('the message handled', () => handled.length === 1, 10_000);
      expect(handled).toEqual(['polled']);
    } finally {
      await worker.stop({ timeoutMs: 5000 });
    }
  });
});
