import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConsumerNotFoundError,
  ForbiddenError,
  MessageNotFoundError,
  NotFoundError,
  OutsideRetentionError,
} from '../../client/index.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { clientOf, until } from './support.js';

/**
 * The owner's calls of LeaseqClient against a real local runtime: dead letters, redrive, replay,
 * parked keys and skip, trace, audit, keys, a Lambda consumer's state, and their typed errors.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'ops',
    queues: {
      jobs: { shards: 1, max_attempts: 1 },
      ledger: { shards: 1, ordered: true, max_attempts: 1 },
      events: {
        shards: 1,
        consumers: [{ name: 'billing', entry: 'test/fixtures/consumer-operations.ts', handler: 'billing' }],
      },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

/** Produces `ids` on `queue` and nacks each delivery as not retryable: its dead letters. */
async function deadLetters(queue: string, ids: string[], key?: string): Promise<void> {
  const client = clientOf(t);
  await client.produce(
    queue,
    ids.map((message_id) => ({ message_id, payload: { message_id }, ...(key ? { key } : {}) })),
  );
  const seen = new Set<string>();
  await until(`${ids.length} deliveries`, async () => {
    for (const m of await client.receive(queue, { max_messages: 10, wait_seconds: 1 })) {
      await client.nack(queue, m.receipt, { retryable: false, error: 'bad data' });
      seen.add(m.message_id);
    }
    return seen.size === ids.length || (key !== undefined && seen.size > 0);
  });
}

describe('the owner calls', () => {
  it('list, trace, redrive and purge dead letters, each in the audit trail', async () => {
    const client = clientOf(t);
    await deadLetters('jobs', ['d-1', 'd-2', 'd-3']);
    expect((await client.dlq('jobs')).messages.map((m) => m.message_id).sort()).toEqual([
      'd-1',
      'd-2',
      'd-3',
    ]);
    expect((await client.trace('jobs', 'd-1')).state).toBe('dead');
    await client.dlqPurge('jobs', 'd-3');
    await expect(client.dlqPurge('jobs', 'd-3')).rejects.toBeInstanceOf(MessageNotFoundError);
    const started = await client.redrive('jobs', { rate_per_sec: 100, filter: { message_ids: ['d-1'] } });
    expect(started).toMatchObject({ status: 'running', remaining: 1 });
    await until(
      'the redrive',
      async () => (await client.getRedrive('jobs', started.redrive_id)).status === 'done',
    );
    const slow = await client.redrive('jobs', { rate_per_sec: 0.1 });
    expect((await client.cancelRedrive('jobs', slow.redrive_id)).status).toBe('cancelled');
    await expect(client.getRedrive('jobs', 'no-such-redrive')).rejects.toBeInstanceOf(NotFoundError);
    const actions = (await client.audit('jobs', { limit: 10 })).map((e) => e.action);
    expect(actions).toEqual(['redrive_cancel', 'redrive', 'redrive', 'purge']);
  });

  it('replay a window, and refuse one past the retention with its oldest time', async () => {
    const client = clientOf(t);
    const replay = await client.replay('jobs', {
      from: new Date(Date.now() - 60_000).toISOString(),
      rate_per_sec: 1,
    });
    expect(replay.status).toBe('running');
    expect((await client.getReplay('jobs', replay.replay_id)).replay_id).toBe(replay.replay_id);
    expect((await client.cancelReplay('jobs', replay.replay_id)).status).toMatch(/cancelled|done/);
    const err = await client.replay('jobs', { from: '2020-01-01T00:00:00Z' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutsideRetentionError);
    expect(Date.parse((err as OutsideRetentionError).oldestReplayable ?? '')).toBeGreaterThan(
      Date.parse('2026-01-01'),
    );
  });

  it('list parked keys and skip one, with its reason', async () => {
    const client = clientOf(t);
    await deadLetters('ledger', ['p-1'], 'customer-9');
    await until('the parked key', async () => (await client.parkedKeys('ledger')).length === 1);
    expect((await client.parkedKeys('ledger'))[0]).toMatchObject({
      key: 'customer-9',
      dead_message_id: 'p-1',
    });
    await client.skipKey('ledger', 'customer-9', 'bad data, fixed by hand');
    expect(await client.parkedKeys('ledger')).toEqual([]);
    expect((await client.audit('ledger'))[0]).toMatchObject({
      action: 'skip',
      reason: 'bad data, fixed by hand',
    });
  });

  it("read a Lambda consumer's state, and say which consumer does not exist", async () => {
    const client = clientOf(t);
    expect((await client.stats('events', { consumer: 'billing' })).consumer).toBe('billing');
    expect(await client.dlq('events', {}, { consumer: 'billing' })).toMatchObject({ messages: [] });
    await expect(client.stats('events', { consumer: 'nobody' })).rejects.toBeInstanceOf(
      ConsumerNotFoundError,
    );
  });

  it('make, list and revoke keys; a revoked key is refused', async () => {
    const client = clientOf(t);
    const made = await client.createKey({ name: 'reader', scopes: ['consume:jobs'] });
    expect(made.key).toMatch(/\S{20,}/);
    expect((await client.listKeys()).map((k) => k.name)).toContain('reader');
    const reader = clientOf(t, { apiKey: made.key, maxRetries: 0 });
    await expect(reader.stats('jobs')).rejects.toBeInstanceOf(ForbiddenError);
    await client.revokeKey('reader');
    expect((await client.listKeys()).find((k) => k.name === 'reader')?.revoked_at).not.toBeNull();
  });
});
