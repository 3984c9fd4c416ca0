import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiErrorOf } from '../../client/errors.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The local gateway throttles each queue's routes as the stack declares them: a flood of one
 * queue past twice its quota is refused before the api function runs, the function refuses
 * between (with Retry-After, counted in the queue's stats), and the other queue is untouched.
 */

const FLOOD = 80;

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'throttles',
    queues: {
      noisy: { shards: 1, rate_limits: { produce: { requests_per_sec: 5 } } },
      quiet: { shards: 1 },
    },
  });
});

afterAll(async () => {
  await t?.close();
});

const produce = (queue: string, i: number) =>
  t.api(`/queues/${queue}/messages`, { body: { messages: [{ payload: { i } }] } });

describe('per-queue gateway throttles', () => {
  it('refuse a flood at the gateway, what passes it at the quota, and leave the other queue alone', async () => {
    const [noisy, quiet] = await Promise.all([
      Promise.all(Array.from({ length: FLOOD }, (_, i) => produce('noisy', i))),
      Promise.all(Array.from({ length: 20 }, (_, i) => produce('quiet', i))),
    ]);

    const accepted = noisy.filter((a) => a.status === 200);
    const byQuota = noisy.filter((a) => a.status === 429 && a.body.error?.code === 'QUOTA_EXCEEDED');
    const byGateway = noisy.filter((a) => a.status === 429 && a.body.message === 'Too Many Requests');
    // Every answer is one of the three: nothing else, no 5xx.
    expect(accepted.length + byQuota.length + byGateway.length).toBe(FLOOD);
    // The gateway's bucket holds twice the quota: it cannot let a burst of 80 through.
    expect(byGateway.length).toBeGreaterThan(0);
    expect(accepted.length).toBeGreaterThan(0);
    for (const a of byQuota) expect(Number(a.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // API Gateway's own answer carries no Retry-After.
    for (const a of byGateway) expect(a.headers.get('retry-after')).toBeNull();

    // The function saw only what passed the gateway: its throttled count is its own refusals.
    const stats = await t.api('/queues/noisy/stats');
    expect(stats.body.throttled_total).toBe(byQuota.length);
    expect((await t.records('noisy')).length).toBe(accepted.length);

    expect(quiet.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect((await t.records('quiet')).length).toBe(20);
  });

  it("answer as API Gateway does, which leaseq's client reads as its own codes", async () => {
    const post = (path: string, body: string) =>
      fetch(`${t.runtime.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.runtime.adminKey}`, 'content-type': 'application/json' },
        body,
      });
    const tooLarge = await post('/queues/quiet/messages', 'x'.repeat(11 * 1024 * 1024));
    const tooLargeText = await tooLarge.text();
    expect([tooLarge.status, JSON.parse(tooLargeText)]).toEqual([
      413,
      { message: 'Request Entity Too Large' },
    ]);
    expect(apiErrorOf(413, tooLargeText, null).code).toBe('PAYLOAD_TOO_LARGE');

    // Past noisy's gateway bucket (twice its quota of 5): some of 20 at once are the gateway's.
    let throttled: string | undefined;
    for (let i = 0; i < 100 && throttled === undefined; i++) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, async () => {
          const res = await post('/queues/noisy/messages', JSON.stringify({ messages: [{ payload: i }] }));
          return { status: res.status, retryAfter: res.headers.get('retry-after'), text: await res.text() };
        }),
      );
      throttled = answers.find((a) => a.status === 429 && a.retryAfter === null)?.text;
    }
    const text = throttled ?? '';
    expect(JSON.parse(text)).toEqual({ message: 'Too Many Requests' });
    const error = apiErrorOf(429, text, null);
    expect([error.code, error.message]).toEqual(['QUOTA_EXCEEDED', 'Too Many Requests']);
  });
});
