import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/** Rate quotas per queue and per key, and the storage quota of a queue. */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'quotas',
    queues: {
      limited: { shards: 1, rate_limits: { produce: { requests_per_sec: 2 } } },
      bytes: { shards: 1, rate_limits: { produce: { bytes_per_sec: 1500 } } },
      counted: { shards: 1, rate_limits: { produce: { messages_per_sec: 5 } } },
      free: { shards: 1 },
      small: { shards: 1, storage_quota_bytes: 1000 },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

const produce = (queue: string, id: string, payload: unknown = 1, key?: string | null) =>
  t.api(`/queues/${queue}/messages`, {
    body: { messages: [{ message_id: id, payload }] },
    ...(key !== undefined ? { key } : {}),
  });

describe('rate quotas', () => {
  it('answers 429 with Retry-After over a queue rate, writes nothing for it, and leaves other queues alone', async () => {
    // Four at once: the gateway's throttle is twice the quota (a burst of 4), so all four reach
    // the function, whose quota refuses what passes 2 (gateway-throttles.test.ts floods past it).
    const limited = await Promise.all(Array.from({ length: 4 }, (_, i) => produce('limited', `l-${i}`)));
    const free = await Promise.all(Array.from({ length: 6 }, (_, i) => produce('free', `f-${i}`)));
    const refused = limited.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(limited.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(2);
    for (const r of refused) {
      expect(r.body.error.code).toBe('QUOTA_EXCEEDED');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    expect(free.every((r) => r.status === 200)).toBe(true);
    const accepted = limited.filter((r) => r.status === 200).map((r) => r.body.results[0].message_id);
    const stored = (await t.records('limited')).map((r) => r.envelope.message_id);
    expect(stored.sort()).toEqual(accepted.sort());
    // After the wait it asked for, the queue takes messages again.
    await new Promise((r) => setTimeout(r, 1000 * Number(refused[0]?.headers.get('retry-after'))));
    expect((await produce('limited', 'l-later')).status).toBe(200);
  });

  it('limits bytes a second', async () => {
    const big = 'x'.repeat(1000);
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => produce('bytes', `b-${i}`, big)));
    // 1,500 bytes a second: one ~1 KB request at once, then one about every 0.7 s.
    expect(answers.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
    expect(answers.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(2);
  });

  it('limits messages a second, counted in the body, and stores nothing of a refused batch', async () => {
    const batch = (prefix: string, n: number) =>
      t.api('/queues/counted/messages', {
        body: {
          messages: Array.from({ length: n }, (_, i) => ({ message_id: `${prefix}-${i}`, payload: i })),
        },
      });
    expect((await batch('m', 5)).status).toBe(200);
    // One request, three messages: over the five a second the first batch took.
    const over = await batch('over', 3);
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('QUOTA_EXCEEDED');
    expect(over.body.error.message).toMatch(/queue:counted:produce:messages/);
    const stored = (await t.records('counted')).map((r) => r.envelope.message_id);
    expect(stored.sort()).toEqual(['m-0', 'm-1', 'm-2', 'm-3', 'm-4']);
  });

  it('limits an API key on its own, whatever queue it uses', async () => {
    const created = await t.api('/keys', {
      body: {
        name: 'slow-producer',
        scopes: ['produce:*'],
        rate_limits: { produce: { requests_per_sec: 1 } },
      },
    });
    const key = created.body.key as string;
    const answers = await Promise.all([1, 2, 3].map((i) => produce('free', `k-${i}`, 1, key)));
    expect(answers.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
    expect(answers.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(1);
    // The admin key, on the same queue, is not limited by that key's quota.
    expect((await produce('free', 'k-admin')).status).toBe(200);
  });
});

describe('storage quota', () => {
  it('refuses produce while the queue holds its quota, and takes messages again once consumed', async () => {
    const q = queueApi(t, 'small');
    const payload = 'p'.repeat(600);
    expect((await produce('small', 's-1', payload)).status).toBe(200);
    expect((await produce('small', 's-2', payload)).status).toBe(200);
    const over = await produce('small', 's-3', payload);
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('QUOTA_EXCEEDED');
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another queue of the tenant is not affected.
    expect((await produce('free', 'other-1', payload)).status).toBe(200);
    const stats = await q.stats();
    expect(stats.stored_bytes).toBeGreaterThanOrEqual(1000);
    expect(stats.storage_quota_bytes).toBe(1000);

    const got = await q.receiveAll(2, 5000);
    await q.ack(got.map((m) => m.receipt));
    expect((await q.stats()).stored_bytes).toBe(0);
    expect((await produce('small', 's-3', payload)).status).toBe(200);
  });
});
