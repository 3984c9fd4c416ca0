import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AdaptiveLimit,
  type LeaseqClient,
  type LimitStats,
  type ReceivedMessage,
} from '../../client/index.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { clientOf, sleep, until, workerPool } from './support.js';

/**
 * A Worker's dependency limits (client/limiter.ts) against a real local runtime: what it fetches,
 * what a throttling answer does to a message, and what it learns. How fast a limit converges is
 * the limiter's own test, in virtual time (test/unit/limiter.test.ts).
 */

let t: TestRuntime;
let client: LeaseqClient;
const pool = workerPool(() => client);
const startWorker = pool.start;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'limits',
    queues: {
      gated: { shards: 2 },
      throttled: { shards: 1, max_attempts: 1 },
      learned: { shards: 2 },
      spiral: { shards: 2, lease_seconds: 2, max_lease_seconds: 4, backoff_seconds: [1] },
      guarded: { shards: 2, lease_seconds: 2, max_lease_seconds: 4, backoff_seconds: [1] },
      unknown: { shards: 1 },
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

async function produce(queue: string, n: number) {
  for (let i = 0; i < n; i += 100)
    await client.produce(
      queue,
      Array.from({ length: Math.min(100, n - i) }, (_, k) => ({
        message_id: `${queue}-${i + k}`,
        payload: i + k,
      })),
    );
}

/** A dependency that serves `slots` calls at once in `ms` each; the rest wait their turn. */
function dependency(slots: number, ms: number) {
  let busy = 0;
  const waiting: (() => void)[] = [];
  return async () => {
    if (busy >= slots) await new Promise<void>((resolve) => waiting.push(resolve));
    else busy++;
    await sleep(ms);
    const next = waiting.shift();
    if (next) next();
    else busy--;
  };
}

/**
 * A dependency that thrashes under load, as a database does: 8 calls served at once, each slower
 * the more calls are outstanding (`baseMs` alone, 29× that with 64 outstanding). `release` lets
 * every waiting call go, so a stopped Worker's handlers end.
 */
function thrashing(baseMs: number) {
  const SLOTS = 8;
  let outstanding = 0;
  let busy = 0;
  let released = false;
  const waiting: (() => void)[] = [];
  const call = async () => {
    outstanding++;
    try {
      if (busy >= SLOTS && !released) await new Promise<void>((resolve) => waiting.push(resolve));
      else busy++;
      if (!released) await sleep(baseMs * (1 + Math.max(0, outstanding - SLOTS) / 2));
      const next = waiting.shift();
      if (next) next();
      else busy--;
    } finally {
      outstanding--;
    }
  };
  const release = () => {
    released = true;
    for (const w of waiting.splice(0)) w();
  };
  return { call, release };
}

describe('a Worker with dependency limits', () => {
  it('keeps a thrashing dependency out of the death spiral that a fixed concurrency of 64 falls into', async () => {
    // Fixed at 64: each call waits behind 56 others at ~1.2 s each, past the 4 s a delivery may
    // stay leased, so handlers finish after their lease is gone and their work is done again.
    await produce('spiral', 300);
    const fixed = thrashing(40);
    let fixedExpired = 0;
    startWorker({
      queue: 'spiral',
      concurrency: 64,
      handler: async (_m, ctx) => {
        await fixed.call();
        if (ctx.signal.aborted) fixedExpired++;
      },
    });
    await until('ten leases lost', () => fixedExpired >= 10, 30_000);
    fixed.release();
    await pool.stopAll();

    // The same Worker with the dependency behind an adaptive limit: the limit settles where the
    // dependency is still fast; no lease runs out and nothing is delivered twice.
    await produce('guarded', 300);
    const guarded = thrashing(40);
    const seen = new Map<string, number[]>();
    let guardedExpired = 0;
    const { worker } = startWorker({
      queue: 'guarded',
      concurrency: 64,
      limits: { db: { initial: 8, max: 64 } },
      handler: async (m, ctx) => {
        seen.set(m.message_id, [...(seen.get(m.message_id) ?? []), m.attempt]);
        await ctx.call('db', guarded.call);
        if (ctx.signal.aborted) guardedExpired++;
      },
    });
    // Every message acked once: a lease lost on the way would have been acked by its redelivery,
    // which `seen` would show, only after the first delivery's ack was refused.
    await until('300 acked', async () => (await client.stats('guarded')).acked_total === 300, 60_000);
    guarded.release();
    expect(guardedExpired).toBe(0);
    expect([...seen.values()].filter((a) => a.length > 1 || a[0] !== 1)).toEqual([]);
    expect((worker.stats().limits.db as LimitStats).limit).toBeLessThan(32);
  }, 90_000);

  it('runs no more handlers than the smallest limit, whatever its concurrency', async () => {
    await produce('gated', 40);
    const db = new AdaptiveLimit({ min: 3, max: 3 });
    let running = 0;
    let most = 0;
    const seen = new Set<string>();
    startWorker({
      queue: 'gated',
      concurrency: 20,
      limits: { db },
      handler: async (m, ctx) => {
        most = Math.max(most, ++running);
        await ctx.call('db', () => sleep(30));
        running--;
        seen.add(m.message_id);
      },
    });
    await until('40 handled', () => seen.size === 40, 20_000);
    expect(most).toBe(3);
  });

  it('gives a message back without using an attempt when its dependency throttles', async () => {
    await produce('throttled', 1);
    const deliveries: ReceivedMessage[] = [];
    const throttled: string[] = [];
    const { worker } = startWorker({
      queue: 'throttled',
      limits: { payments: {} },
      on: { throttled: (m) => throttled.push(m.message_id) },
      handler: async (m, ctx) => {
        deliveries.push(m);
        await ctx.call('payments', async () => {
          if (deliveries.length === 1) throw Object.assign(new Error('slow down'), { status: 429 });
        });
      },
    });
    await until('handled on its second delivery', () => deliveries.length === 2, 15_000);
    // max_attempts 1: a counted attempt would have dead-lettered it.
    expect(deliveries.map((m) => m.attempt)).toEqual([1, 1]);
    expect(throttled).toEqual(['throttled-0']);
    await until('acked', async () => (await client.stats('throttled')).depth === 0);
    expect((await client.stats('throttled')).dlq_depth).toBe(0);
    expect(worker.stats().limits.payments?.drops.overload).toBe(1);
  });

  it('learns a limit under what its concurrency would send, shows it, and delivers each message once', async () => {
    await produce('learned', 400);
    const call = dependency(4, 20);
    const changes: LimitStats[] = [];
    const seen = new Map<string, number>();
    const { worker } = startWorker({
      queue: 'learned',
      concurrency: 64,
      limits: { db: { initial: 64, max: 64 } },
      on: { limit: (_name, stats) => changes.push(stats) },
      handler: async (m, ctx) => {
        await ctx.call('db', call);
        seen.set(m.message_id, (seen.get(m.message_id) ?? 0) + 1);
      },
    });
    await until('400 handled', () => seen.size === 400, 60_000);
    const { limit } = worker.stats().limits.db as LimitStats;
    expect(limit).toBeLessThan(16);
    expect(changes.at(-1)?.limit).toBe(limit);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
  });

  it('refuses a call to a dependency it was not given', async () => {
    await produce('unknown', 1);
    const errors: unknown[] = [];
    startWorker({
      queue: 'unknown',
      limits: { db: {} },
      handler: async (_m, ctx) => {
        await ctx.call('cache', async () => undefined).catch((err) => errors.push(err));
      },
    });
    await until('the call refused', () => errors.length === 1);
    expect(String(errors[0])).toContain('no limit named cache');
  });
});
