import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/** API keys made, used and revoked at run time. */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime();
});
afterAll(async () => {
  await t?.close();
});

const produce = (key: string) =>
  t.api('/queues/jobs/messages', { key, body: { messages: [{ payload: 1 }] } });

describe('API key lifecycle', () => {
  it('creates a key, uses it within its scopes, lists it without the secret, and revokes it', async () => {
    const created = await t.api('/keys', { body: { name: 'billing-producer', scopes: ['produce:jobs'] } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'billing-producer',
      scopes: ['produce:jobs'],
      revoked_at: null,
    });
    const key: string = created.body.key;
    expect(key).toMatch(/^lq_[A-Za-z0-9_-]{43}$/);

    expect((await produce(key)).body.results[0].status).toBe('accepted');
    const wrongScope = await t.api('/queues/jobs/receive', { key, body: {} });
    expect(wrongScope.status).toBe(403);
    const wrongQueue = await t.api('/queues/ledger/messages', {
      key,
      body: { messages: [{ key: 'k', payload: 1 }] },
    });
    expect(wrongQueue.status).toBe(403);

    const listed = await t.api('/keys');
    const entry = listed.body.keys.find((k: { name: string }) => k.name === 'billing-producer');
    expect(entry).toMatchObject({ scopes: ['produce:jobs'], created_by: 'local-admin', revoked_at: null });
    expect(JSON.stringify(listed.body)).not.toContain(key);

    // Consumer ids default to the key's name.
    const consumer = await t.api('/keys', { body: { name: 'billing-worker', scopes: ['consume:jobs'] } });
    const [m] = (
      await t.api('/queues/jobs/receive', {
        key: consumer.body.key,
        body: { wait_seconds: 5, max_messages: 1 },
      })
    ).body.messages;
    await t.api('/queues/jobs/nack', {
      key: consumer.body.key,
      body: { receipt: m.receipt, retryable: false },
    });
    const dead = await t.api(`/queues/jobs/dlq/${m.message_id}`);
    expect(dead.body.attempts[0].consumer_id).toBe('billing-worker');

    expect((await t.api('/keys/billing-producer', { method: 'DELETE' })).status).toBe(204);
    const deadline = Date.now() + 10_000;
    let status = 200;
    while (status !== 401 && Date.now() < deadline) {
      status = (await produce(key)).status;
      if (status !== 401) await new Promise((r) => setTimeout(r, 250));
    }
    expect(status).toBe(401);
    const after = (await t.api('/keys')).body.keys.find(
      (k: { name: string }) => k.name === 'billing-producer',
    );
    expect(after.revoked_at).not.toBeNull();
  }, 30_000);

  it('refuses a second key of the same name, bad scopes, and callers without admin:*', async () => {
    await t.api('/keys', { body: { name: 'dup', scopes: ['consume:*'] } });
    const again = await t.api('/keys', { body: { name: 'dup', scopes: ['consume:*'] } });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('CONFLICT');
    const bad = await t.api('/keys', { body: { name: 'x', scopes: ['write:jobs'] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.issues[0].path).toBe('scopes[0]');
    const queueAdmin = await t.api('/keys', { body: { name: 'jobs-admin', scopes: ['admin:jobs'] } });
    const denied = await t.api('/keys', {
      key: queueAdmin.body.key,
      body: { name: 'y', scopes: ['admin:*'] },
    });
    expect(denied.status).toBe(403);
    expect((await t.api('/keys/nobody', { method: 'DELETE' })).status).toBe(404);
    expect((await t.api('/keys', { key: null })).status).toBe(401);
  });
});
