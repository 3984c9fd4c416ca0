import { describe, expect, it } from 'vitest';
import { RetryAfterError } from '../../client/errors.js';
import { AdaptiveLimit, isOverload } from '../../client/limiter.js';

/**
 * The adaptive limit (client/limiter.ts) against a dependency simulated in virtual time: 8 calls
 * served at once, the rest queued, and every call slower the more are outstanding (a database
 * thrashing under its load). Virtual time makes the figures exact, whatever the machine's load.
 */

const SERVICE_MS = 20;
const SLOTS = 8;

/** A closed loop of `callers` calling the dependency through `limit` for `ms` of virtual time. */
async function simulate(
  callers: number,
  ms: number,
  limit: (now: () => number) => { run<R>(fn: () => Promise<R>): Promise<R>; readonly limit: number },
) {
  let now = 0;
  const clock = () => now;
  const limiter = limit(clock);
  // Calls in service and queued at the dependency, each resolved when it is done.
  const serving: { doneAt: number; resolve: () => void }[] = [];
  const queued: (() => void)[] = [];
  const serviceMs = () => SERVICE_MS * (1 + Math.max(0, serving.length + queued.length - SLOTS) / 16);
  const call = () =>
    new Promise<void>((resolve) => {
      const start = () => serving.push({ doneAt: now + serviceMs(), resolve });
      if (serving.length < SLOTS) start();
      else queued.push(start);
    });
  const done: number[] = [];
  const limits: { at: number; limit: number }[] = [];
  let stopped = false;
  const loops = Array.from({ length: callers }, async () => {
    while (!stopped) {
      await limiter.run(call);
      done.push(now);
    }
  });
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  await settle();
  while (now < ms) {
    serving.sort((a, b) => a.doneAt - b.doneAt);
    const next = serving.shift();
    if (!next) break;
    now = next.doneAt;
    next.resolve();
    queued.shift()?.();
    await settle();
    limits.push({ at: now, limit: limiter.limit });
  }
  stopped = true;
  for (const s of serving.splice(0)) s.resolve();
  for (const q of queued.splice(0)) q();
  await settle();
  void loops;
  const throughput = (from: number, to: number) =>
    done.filter((t) => t >= from && t < to).length / ((to - from) / 1000);
  return { limits, throughput };
}

const fixed = (n: number) => () => new AdaptiveLimit({ initial: n, min: n, max: n });

describe('AdaptiveLimit', () => {
  it('started at 64 over a dependency that serves 8 at once, falls under 12 within 30 s and keeps close to the best fixed throughput', async () => {
    const adaptive = await simulate(64, 60_000, (now) => new AdaptiveLimit({ initial: 64, max: 64 }, now));
    const settledAt = adaptive.limits.find((l) => l.limit < 12)?.at ?? Number.POSITIVE_INFINITY;
    expect(settledAt).toBeLessThan(30_000);
    // Once settled it stays there.
    expect(Math.max(...adaptive.limits.filter((l) => l.at > 30_000).map((l) => l.limit))).toBeLessThan(12);
    const best = Math.max(
      ...(await Promise.all(
        [6, 8, 10, 12].map(async (n) => (await simulate(64, 60_000, fixed(n))).throughput(30_000, 60_000)),
      )),
    );
    expect(adaptive.throughput(30_000, 60_000)).toBeGreaterThanOrEqual(0.9 * best);
    // A fixed 64 is the spiral: the dependency slows under what it cannot serve.
    expect((await simulate(64, 60_000, fixed(64))).throughput(30_000, 60_000)).toBeLessThan(0.5 * best);
  });

  it('grows from its floor while calls stay fast, doubling until the first sign of queueing', async () => {
    const run = await simulate(64, 20_000, (now) => new AdaptiveLimit({ initial: 1, max: 64 }, now));
    expect(run.limits.find((l) => l.limit >= 8)?.at).toBeLessThan(2_000);
    expect(Math.max(...run.limits.filter((l) => l.at > 10_000).map((l) => l.limit))).toBeLessThan(12);
  });

  it('shrinks for a throttling answer, and counts it', async () => {
    let now = 0;
    const limit = new AdaptiveLimit({ initial: 10, max: 10 }, () => now);
    const calls = Array.from({ length: 10 }, (_, i) =>
      limit
        .run(async () => {
          now += 5;
          if (i === 3) throw new RetryAfterError(1);
        })
        .catch(() => undefined),
    );
    await Promise.all(calls);
    expect(limit.limit).toBe(7);
    expect(limit.stats().drops).toEqual({ latency: 0, overload: 1 });
  });

  it('tells a throttling answer from a failure', () => {
    expect(isOverload(new RetryAfterError(3))).toBe(true);
    expect(isOverload(Object.assign(new Error('x'), { status: 429 }))).toBe(true);
    expect(isOverload(Object.assign(new Error('x'), { $metadata: { httpStatusCode: 503 } }))).toBe(true);
    expect(
      isOverload(Object.assign(new Error('x'), { name: 'ProvisionedThroughputExceededException' })),
    ).toBe(true);
    expect(isOverload(Object.assign(new Error('x'), { name: 'ThrottlingException' }))).toBe(true);
    expect(isOverload(Object.assign(new Error('x'), { status: 500 }))).toBe(false);
    expect(isOverload(new Error('bad row'))).toBe(false);
  });
});
