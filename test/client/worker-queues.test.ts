import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseqClient, QueueSlots, ReceivedMessage } from '../../client/index.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { clientOf, sleep, until, workerPool } from './support.js';

/**
 * One Worker serving several queues against a real local runtime: weights divide running
 * handlers (client/slots.ts), an empty queue's share goes to the others and comes back when it
 * has work again.
 */

let t: TestRuntime;
let client: LeaseqClient;
const pool = workerPool(() => client);

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'queues',
    queues: {
      heavy: { shards: 2 },
      light: { shards: 1 },
      capped: { shards: 1 },
      floor: { shards: 1 },
      wide: { shards: 1 },
    },
  });
  client = clientOf(t);
});
afterEach(async () => {
  await pool.stopAll();
});
afterAll(async () => {
  await t?.close();
});

async function produce(queue: string, n: number, from = 0) {
  for (let i = 0; i < n; i += 100)
    await client.produce(
      queue,
      Array.from({ length: Math.min(100, n - i) }, (_, k) => ({
        message_id: `${queue}-${from + i + k}`,
        payload: from + i + k,
      })),
    );
}

/** Handlers that wait until the test opens the gate. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** Counts a queue's handlers running now and the most at once since `reset`. */
function counter() {
  const c = {
    running: 0,
    most: 0,
    done: [] as ReceivedMessage<unknown>[],
    async around(message: ReceivedMessage<unknown>, work: () => Promise<unknown>) {
      c.running++;
      c.most = Math.max(c.most, c.running);
      try {
        await work();
      } finally {
        c.running--;
        c.done.push(message);
      }
    },
    reset() {
      c.most = c.running;
    },
  };
  return c;
}

describe('a Worker of several queues', () => {
  it("divides running handlers by weight: a slow queue keeps to its share while the other has work, takes an empty queue's slots, and gives them back", async () => {
    await produce('heavy', 150);
    await produce('light', 40);
    const heavy = counter();
    const light = counter();
    let lightGate = gate();
    const slots: { queue: string; stats: QueueSlots }[] = [];
    const { worker, errors } = pool.start({
      concurrency: 12,
      queues: {
        heavy: { weight: 5, handler: (m) => heavy.around(m, () => sleep(250)) },
        light: { weight: 1, handler: (m) => light.around(m, () => lightGate.opened) },
      },
      on: { slots: (queue, stats) => slots.push({ queue, stats }) },
    });

    // 5:1 of 12 slots: 10 and 2. The light queue's handlers hold their slots; it takes no more.
    await until('the heavy backlog handled', () => heavy.done.length === 150, 30_000);
    expect(heavy.most).toBe(10);
    expect(light.most).toBe(2);
    expect(light.running).toBe(2);

    // The heavy queue comes back empty: its share goes to the light one, which fills every slot.
    await until('the light queue takes every slot', () => light.running === 12, 10_000);
    expect(worker.stats().queues).toMatchObject({
      heavy: { share: 0, empty: true, running: 0 },
      light: { share: 12, empty: false, running: 12 },
    });
    expect(slots).toContainEqual({
      queue: 'heavy',
      stats: expect.objectContaining({ empty: true, share: 0 }),
    });

    // Work arrives at the heavy queue: it sees it though every slot is taken, and the slots the
    // light queue frees go to it until it runs its share again; the light queue stays at 2.
    await produce('heavy', 30, 150);
    const firstGate = lightGate;
    lightGate = gate();
    heavy.reset();
    await until('the heavy queue owed its share', () => worker.stats().queues.heavy?.share === 10, 10_000);
    const before = light.done.length;
    firstGate.open();
    await until('the light queue back at its share', () => light.done.length >= before + 12, 10_000);
    light.reset();
    await until('the new heavy work handled', () => heavy.done.length === 180, 30_000);
    expect(light.most).toBeLessThanOrEqual(2);
    expect(heavy.most).toBe(10);
    // The message seen while there was no room went back without using an attempt.
    expect(heavy.done.slice(150).every((m) => m.attempt === 1)).toBe(true);

    lightGate.open();
    await until('the light backlog handled', () => light.done.length === 40, 20_000);
    expect(errors).toEqual([]);
  });

  it('keeps a queue within its max, and gives a queue its min whatever the weights', async () => {
    await produce('capped', 20);
    const capped = counter();
    const alone = pool.start({
      concurrency: 8,
      queues: { capped: { max: 2, handler: (m) => capped.around(m, () => sleep(30)) } },
    });
    await until('capped handled', () => capped.done.length === 20, 20_000);
    expect(capped.most).toBe(2);
    expect(alone.errors).toEqual([]);

    // Weights 1:8 of 12 slots would give the floor queue 1; its min of 3 comes off the top, and
    // the 9 left divide 1:8.
    await produce('floor', 10);
    await produce('wide', 30);
    const floor = counter();
    const wide = counter();
    const held = gate();
    const { worker, errors } = pool.start({
      concurrency: 12,
      queues: {
        floor: { weight: 1, min: 3, handler: (m) => floor.around(m, () => held.opened) },
        wide: { weight: 8, handler: (m) => wide.around(m, () => held.opened) },
      },
    });
    await until('both at their shares', () => floor.running === 4 && wide.running === 8, 10_000);
    expect(worker.stats().queues).toMatchObject({ floor: { share: 4, min: 3 }, wide: { share: 8 } });
    held.open();
    await until('both handled', () => floor.done.length === 10 && wide.done.length === 30, 20_000);
    expect(floor.most).toBe(4);
    expect(wide.most).toBe(8);
    expect(errors).toEqual([]);
  });

  it('refuses queues whose mins pass the concurrency, a handler in the wrong place, and a limit it was not given', () => {
    const handler = async () => undefined;
    const start = (options: Parameters<typeof pool.start>[0]) => () => pool.start(options);
    expect(start({ concurrency: 4, queues: { a: { min: 3, handler }, b: { min: 2, handler } } })).toThrow(
      /min slots add up to 5, past the concurrency 4/,
    );
    expect(start({ queues: { a: { handler } }, handler })).toThrow(/each queue's handler in `queues`/);
    expect(start({ queue: 'a', queues: { a: { handler } } })).toThrow(/a queue or queues/);
    expect(start({ queues: { a: { handler, uses: ['db'] } } })).toThrow(/a uses db, which is not one/);
  });
});
