import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/** What survives a restart, and what a partial Kinesis failure answers. */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime();
});
afterAll(async () => {
  await t?.close();
});

const produce = (messages: unknown[]) => t.api('/queues/jobs/messages', { body: { messages } });

describe('restart on the same data folder', () => {
  it('keeps earlier ids duplicate and earlier records in the stream', async () => {
    const ids = ['r-1', 'r-2', 'r-3'];
    const first = await produce(ids.map((id) => ({ message_id: id, payload: id })));
    expect(first.body.results.map((r: { status: string }) => r.status)).toEqual([
      'accepted',
      'accepted',
      'accepted',
    ]);

    await t.restart();

    const again = await produce(ids.map((id) => ({ message_id: id, payload: id })));
    expect(again.body.results.map((r: { status: string }) => r.status)).toEqual([
      'duplicate',
      'duplicate',
      'duplicate',
    ]);
    const stored = (await t.records('jobs')).filter((r) => ids.includes(r.envelope.message_id));
    expect(stored.map((r) => r.envelope.payload).sort()).toEqual(ids);
  });
});

describe('a Kinesis failure for part of a batch', () => {
  it('answers failed and retryable for those messages, and a retry appends each exactly once', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `pf-${i}`);
    const failing = new Set(ids.filter((_, i) => i % 3 === 0));
    t.faults.recordFault = {
      failRecord: (entry) =>
        failing.has(JSON.parse(Buffer.from(entry.Data as Uint8Array).toString()).message_id),
    };
    try {
      const res = await produce(ids.map((id) => ({ message_id: id, payload: id })));
      expect(res.status).toBe(200);
      for (const [i, r] of res.body.results.entries()) {
        expect(r.message_id).toBe(ids[i]);
        if (failing.has(r.message_id)) {
          expect(r.status).toBe('failed');
          expect(r.error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
        } else {
          expect(r.status).toBe('accepted');
        }
      }
      const landed = (await t.records('jobs')).filter((r) => r.envelope.message_id.startsWith('pf-'));
      expect(landed.map((r) => r.envelope.message_id).sort()).toEqual(
        ids.filter((id) => !failing.has(id)).sort(),
      );
    } finally {
      t.faults.clear();
    }

    const retry = await produce(ids.map((id) => ({ message_id: id, payload: id })));
    for (const r of retry.body.results) {
      expect(r.status).toBe(failing.has(r.message_id) ? 'accepted' : 'duplicate');
    }
    const all = (await t.records('jobs')).filter((r) => r.envelope.message_id.startsWith('pf-'));
    expect(all.map((r) => r.envelope.message_id).sort()).toEqual([...ids].sort());
  });

  it('answers 503 UNAVAILABLE with Retry-After when DynamoDB throttles the dedup check, and appends nothing', async () => {
    t.faults.callFault = {
      match: (op) => op === 'DynamoDB.BatchGetItem',
      errorName: 'ThrottlingException',
      throttling: true,
    };
    try {
      const res = await produce([{ message_id: 'throttled-1', payload: 1 }]);
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('UNAVAILABLE');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      t.faults.clear();
    }
    expect((await t.records('jobs')).some((r) => r.envelope.message_id === 'throttled-1')).toBe(false);
    const retry = await produce([{ message_id: 'throttled-1', payload: 1 }]);
    expect(retry.body.results[0].status).toBe('accepted');
  });
});
