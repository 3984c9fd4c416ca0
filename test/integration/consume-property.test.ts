import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueApi, type Received } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * Random sequences of produce, receive, ack, nack, lease expiry and restart. Afterwards every
 * accepted message ends acked or dead-lettered, attempts only grow, and no stale receipt ever
 * succeeded.
 */

const RUNS = 5;
let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'prop',
    queues: Object.fromEntries(
      Array.from({ length: RUNS }, (_, i) => [
        `prop${i}`,
        { shards: 2, lease_seconds: 1, max_lease_seconds: 5, backoff_seconds: [0], max_attempts: 3 },
      ]),
    ),
  });
});
afterAll(async () => {
  await t?.close();
});

type Op =
  | { kind: 'produce'; count: number }
  | { kind: 'receive'; max: number }
  | { kind: 'ack'; pick: number }
  | { kind: 'nack'; pick: number; retryable: boolean }
  | { kind: 'expire' }
  | { kind: 'restart' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('produce' as const), count: fc.integer({ min: 1, max: 5 }) }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('receive' as const), max: fc.integer({ min: 1, max: 5 }) }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('ack' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('nack' as const), pick: fc.nat(), retryable: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'expire' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Held extends Received {
  /** The lease ended: acked, nacked, or a later delivery exists. */
  over: boolean;
  acked: boolean;
}

describe('consumer contract under random operations', () => {
  it('ends every accepted message acked or dead, with growing attempts and no stale receipt succeeding', async () => {
    let run = 0;
    let nextId = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 4, maxLength: 14 }), async (ops) => {
        const q = queueApi(t, `prop${run++}`);
        const accepted = new Set<string>();
        const acked = new Set<string>();
        const lastAttempt = new Map<string, number>();
        const deliveries = new Map<string, Held[]>();
        const held: Held[] = [];

        const record = (got: Received[]) => {
          for (const m of got) {
            expect(m.attempt, `attempts of ${m.message_id} only grow`).toBeGreaterThan(
              lastAttempt.get(m.message_id) ?? 0,
            );
            lastAttempt.set(m.message_id, m.attempt);
            for (const earlier of deliveries.get(m.message_id) ?? []) earlier.over = true;
            const h: Held = { ...m, over: false, acked: false };
            deliveries.set(m.message_id, [...(deliveries.get(m.message_id) ?? []), h]);
            held.push(h);
          }
        };
        const ack = async (h: Held) => {
          const [r] = await q.ack([h.receipt]);
          if (r?.status === 'acked') {
            // Only the current receipt may ack, and the same one again.
            expect(h.over && !h.acked, `stale receipt of ${h.message_id} acked`).toBe(false);
            h.acked = true;
            h.over = true;
            acked.add(h.message_id);
          }
        };

        for (const op of ops) {
          if (op.kind === 'produce') {
            const ids = Array.from({ length: op.count }, () => `m${nextId++}`);
            const results = await q.produce(ids.map((id) => ({ message_id: id, payload: id })));
            for (const r of results) if (r.status === 'accepted') accepted.add(r.message_id);
          } else if (op.kind === 'receive') {
            record(await q.receive({ max_messages: op.max, wait_seconds: 1 }));
          } else if ((op.kind === 'ack' || op.kind === 'nack') && held.length) {
            const h = held[op.pick % held.length] as Held;
            if (op.kind === 'ack') await ack(h);
            else {
              const res = await q.nack({
                receipt: h.receipt,
                retryable: op.retryable,
                error: 'random failure',
              });
              if (res.status === 200) {
                expect(h.over, `stale receipt of ${h.message_id} nacked`).toBe(false);
                h.over = true;
              } else expect(res.status).toBe(409);
            }
          } else if (op.kind === 'expire') {
            await sleep(1100);
            for (const h of held) if (!h.acked) h.over = true;
            await t.runtime.sweep.fire();
          } else if (op.kind === 'restart') {
            await t.restart();
          }
        }

        // Drain: keep consuming (acking everything) until each accepted message is settled.
        const dead = async () =>
          new Set(((await q.dlq()).body.messages as { message_id: string }[]).map((m) => m.message_id));
        const deadline = Date.now() + 30_000;
        let settled = false;
        while (!settled && Date.now() < deadline) {
          const got = await q.receive({ max_messages: 100, wait_seconds: 1 });
          record(got);
          for (const h of got) await ack(held.find((x) => x.receipt === h.receipt) as Held);
          const gone = await dead();
          settled = [...accepted].every((id) => acked.has(id) || gone.has(id));
        }
        const gone = await dead();
        for (const id of accepted) expect(acked.has(id) || gone.has(id), `${id} acked or dead`).toBe(true);
        for (const id of acked) expect(gone.has(id), `${id} both acked and dead`).toBe(false);
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
  }, 300_000);
});
