import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueApi, type Received } from '../helpers/queue-api.js';
import { windowOccupancy } from '../helpers/ranges.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The window of an ordered queue stays bounded while a key is held far past its lease: the gap
 * cap moves the holder's lease out of its range and the key's later messages into its hold area,
 * and the other keys flow through a window a fiftieth (the long form: a five-hundredth) of what
 * passes.
 */

const WINDOW = 100;
/** 5,000 in the suite; LEASEQ_ORDERED_WINDOW_MESSAGES=50000 runs the long form (about 5 minutes). */
const OTHERS = Number(process.env.LEASEQ_ORDERED_WINDOW_MESSAGES ?? 5_000);
const SCALE = Math.max(1, OTHERS / 5_000);
// Extended every 250 ms: a heartbeat must be late by 3 s to lose it, even on a loaded machine.
const LEASE_SECONDS = 3;

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'ordered-window',
    queues: { win: { ordered: true, shards: 1, window_size: WINDOW, lease_seconds: LEASE_SECONDS } },
  });
});
afterAll(async () => {
  await t?.close();
});

describe('an ordered queue with a key held past its lease', () => {
  it(
    `keeps its window within ${WINDOW} while ${OTHERS} messages of other keys flow, then delivers the key's rest in order`,
    async () => {
      const q = queueApi(t, 'win');
      await q.produce([{ message_id: 'held-0', key: 'held', payload: 0 }]);
      const [holder] = await q.receiveAll(1, 5000, { max_messages: 1 });
      expect(holder?.message_id).toBe('held-0');
      const heldSince = Date.now();

      let holding = true;
      const extended: number[] = [];
      const extender = (async () => {
        while (holding) {
          extended.push((await q.extend({ receipt: holder?.receipt, lease_seconds: LEASE_SECONDS })).status);
          await new Promise((r) => setTimeout(r, 250));
        }
      })();

      const others = new Set<string>();
      const early: Received[] = [];
      let peak = 0;
      const sampler = (async () => {
        while (holding) {
          peak = Math.max(peak, ...(await windowOccupancy(t, 'win', 1)));
          await new Promise((r) => setTimeout(r, 20));
        }
      })();

      // The held key's later messages go in among the others, so some of them sit in every part of
      // the log the flow passes through.
      const later: string[] = [];
      const producer = (async () => {
        for (let i = 0; i < OTHERS; i += 100) {
          const batch: unknown[] = Array.from({ length: 100 }, (_, j) => ({
            message_id: `o-${i + j}`,
            key: `k-${(i + j) % 500}`,
            payload: i + j,
          }));
          if ((i / 100) % 10 === 0) {
            const id = `held-${later.length + 1}`;
            later.push(id);
            batch.splice(50, 0, { message_id: id, key: 'held', payload: later.length });
          }
          const results = await q.produce(batch);
          expect(results.every((r) => r.status === 'accepted')).toBe(true);
        }
      })();

      const deadline = Date.now() + 150_000 * SCALE;
      const consumer = async () => {
        while (others.size < OTHERS && Date.now() < deadline) {
          const got = await q.receive({ max_messages: 10, wait_seconds: 1 });
          for (const m of got) (m.key === 'held' ? early : []).push(m);
          for (const m of got) if (m.key !== 'held') others.add(m.message_id);
          const receipts = got.filter((m) => m.key !== 'held').map((m) => m.receipt);
          if (receipts.length) await q.ack(receipts);
        }
      };
      await Promise.all([producer, consumer(), consumer()]);
      // Held for ten leases at least, whatever the flow took.
      const left = heldSince + 10 * LEASE_SECONDS * 1000 - Date.now();
      if (left > 0) await new Promise((r) => setTimeout(r, left));
      holding = false;
      await Promise.all([extender, sampler]);

      expect(others.size).toBe(OTHERS);
      expect(early.map((m) => m.message_id)).toEqual([]);
      expect(extended.every((s) => s === 200)).toBe(true);
      expect(peak).toBeLessThanOrEqual(WINDOW);
      expect(peak).toBeGreaterThan(0);

      expect((await q.ack([holder?.receipt as string]))[0]?.status).toBe('acked');
      const rest: string[] = [];
      const until = Date.now() + 30_000;
      while (rest.length < later.length && Date.now() < until) {
        const got = await q.receive({ max_messages: 10, wait_seconds: 1 });
        rest.push(...got.map((m) => m.message_id));
        if (got.length) await q.ack(got.map((m) => m.receipt));
      }
      expect(rest).toEqual(later);
      expect(await q.stats()).toMatchObject({ depth: 0, in_flight: 0 });
    },
    240_000 * SCALE,
  );
});
