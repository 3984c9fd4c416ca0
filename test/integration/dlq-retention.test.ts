import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryCommand } from '../../functions/aws/dynamodb.js';
import { buildServices } from '../../functions/services.js';
import { messagePk, STATE_SK } from '../../functions/store/keys.js';
import { runJob } from '../helpers/jobs.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * A DLQ retention that reaches the dead letters already there: a dead letter's expiry is its
 * items' TTL, stamped at its death, so an extension (an operator's, or the tenant file's raised
 * retention) must move every item's TTL and the bytes' expiry with it. The sweep runs only when
 * fired here.
 */

const HOUR = 3_600_000;
let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime(
    {
      tenant: 'dlqret',
      queues: {
        incident: { shards: 1, dlq_retention_hours: 48 },
        followed: { shards: 1, dlq_retention_hours: 48 },
      },
    },
    undefined,
    { sweepIntervalMs: 60_000, idlePollMs: 20 },
  );
});
afterAll(async () => {
  await t?.close();
});

async function deadLetters(queue: string, n: number): Promise<string[]> {
  const q = queueApi(t, queue);
  const ids = Array.from({ length: n }, (_, i) => `${queue}-${i}`);
  await q.produce(ids.map((message_id, i) => ({ message_id, payload: { i, pad: 'x'.repeat(100) } })));
  const got = await q.receiveAll(n, 15_000);
  for (const m of got) await q.nack({ receipt: m.receipt, retryable: false, error: 'poison' });
  expect((await q.stats()).dlq_depth).toBe(n);
  return ids;
}

/** Every item of a message with a TTL: its sort key → TTL (epoch s); and its death. */
async function ttlsOf(queue: string, id: string) {
  const out = await t.runtime.clients.doc.send(
    new QueryCommand({
      TableName: t.runtime.config.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': messagePk(queue, id) },
    }),
  );
  const items = out.Items ?? [];
  const state = items.find((i) => i.sk === STATE_SK);
  return {
    deadAt: Number(state?.dead_at),
    ttls: Object.fromEntries(
      items.filter((i) => typeof i.ttl === 'number').map((i) => [i.sk, i.ttl as number]),
    ),
  };
}

describe('a DLQ retention extension', () => {
  it('moves every item of each dead letter already there, and its bytes, onto the new retention from its death', async () => {
    const ids = await deadLetters('incident', 3);
    const before = await ttlsOf('incident', ids[0] as string);
    // Stamped at its death with the queue's 48 h: its state and the history of its attempt.
    expect(before.ttls.S).toBe(Math.ceil((before.deadAt + 48 * HOUR) / 1000));
    expect(Object.keys(before.ttls).length).toBeGreaterThan(1);

    const started = await t.api('/queues/incident/retention', {
      method: 'POST',
      body: { dlq_retention_hours: 720, reason: 'keep them while the bug is fixed', rate_per_sec: 1000 },
    });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({
      status: 'running',
      total: 3,
      extended: 0,
      dlq_retention_hours: 720,
    });
    const done = await runJob(t, `/queues/incident/retentions/${started.body.retention_id}`);
    expect(done).toMatchObject({ status: 'done', total: 3, extended: 3, unchanged: 0 });

    for (const id of ids) {
      const { deadAt, ttls } = await ttlsOf('incident', id);
      const kept = Math.ceil((deadAt + 720 * HOUR) / 1000);
      // No item of it is deleted before the new expiry.
      for (const [sk, ttl] of Object.entries(ttls)) expect(ttl, `${id} ${sk}`).toBeGreaterThanOrEqual(kept);
      expect(ttls.S).toBe(kept);
    }
    // Their bytes are held until then, and freed then: the storage quota follows.
    // (The sweep's pass wrote the moves of their bytes as it ended.)
    const sweep = buildServices(t.runtime.config, t.runtime.clients);
    expect((await sweep.storage.expireDeadLetters('incident', Date.now() + 49 * HOUR)).letters).toBe(0);
    expect((await sweep.storage.expireDeadLetters('incident', Date.now() + 721 * HOUR)).letters).toBe(3);
    // Listed while the old retention would have hidden them, and audited with who and why.
    const audit = (await t.api('/queues/incident/audit')).body.entries;
    expect(audit).toContainEqual(
      expect.objectContaining({
        action: 'retention',
        target: started.body.retention_id,
        detail: expect.objectContaining({
          dlq_retention_hours: 720,
          reason: 'keep them while the bug is fixed',
        }),
      }),
    );
  });

  it('only extends: a shorter retention leaves every dead letter as it was, counted unchanged', async () => {
    const started = await t.api('/queues/incident/retention', {
      method: 'POST',
      body: { dlq_retention_hours: 100, reason: 'shorter', rate_per_sec: 1000 },
    });
    const done = await runJob(t, `/queues/incident/retentions/${started.body.retention_id}`);
    expect(done).toMatchObject({ status: 'done', total: 3, extended: 0, unchanged: 3 });
    const { deadAt, ttls } = await ttlsOf('incident', 'incident-0');
    expect(ttls.S).toBe(Math.ceil((deadAt + 720 * HOUR) / 1000));
  });

  it('refuses a retention outside 24 h to 2 years, and a missing reason, with the field', async () => {
    for (const [body, field] of [
      [{ dlq_retention_hours: 12, reason: 'r' }, 'dlq_retention_hours'],
      [{ dlq_retention_hours: 3 * 365 * 24, reason: 'r' }, 'dlq_retention_hours'],
      [{ dlq_retention_hours: 100 }, 'reason'],
    ] as const) {
      const res = await t.api('/queues/incident/retention', { method: 'POST', body });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({
        code: 'INVALID_REQUEST',
        details: { issues: [{ path: field }] },
      });
    }
  });
});

describe("the tenant file's raised DLQ retention", () => {
  it('reaches the dead letters already there when the sweep next looks, once', async () => {
    const ids = await deadLetters('followed', 2);
    const { retentions } = buildServices(t.runtime.config, t.runtime.clients);
    const config = t.runtime.config.tenant.queues.followed;
    if (!config) throw new Error('no queue followed');
    // Dead letters stamped with the file's retention: a look does nothing.
    await retentions.follow('followed', config);
    expect(await retentions.anyRunning('followed')).toBe(false);
    // The file says 96 h now (a deploy): the next look starts an extension, as the tenant file;
    // a look while it runs starts no other.
    const raised = { ...config, dlq_retention_hours: 96 };
    await retentions.follow('followed', raised);
    await retentions.follow('followed', raised);
    expect(await retentions.anyRunning('followed')).toBe(true);
    for (let i = 0; i < 20 && (await retentions.anyRunning('followed')); i++) await t.runtime.sweep.fire();
    for (const id of ids) {
      const { deadAt, ttls } = await ttlsOf('followed', id);
      expect(ttls.S).toBe(Math.ceil((deadAt + 96 * HOUR) / 1000));
    }
    // Extended, the oldest is stamped as the file says: later looks start nothing.
    await retentions.follow('followed', raised);
    expect(await retentions.anyRunning('followed')).toBe(false);
    const audit = (await t.api('/queues/followed/audit')).body.entries;
    expect(audit.filter((e: { action: string }) => e.action === 'retention')).toEqual([
      expect.objectContaining({
        actor: 'tenant file',
        detail: expect.objectContaining({ dlq_retention_hours: 96 }),
      }),
    ]);
  });
});
