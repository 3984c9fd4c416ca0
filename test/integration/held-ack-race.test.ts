import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReceiptSigner } from '../../functions/core/receipt.js';
import { HeldDelivery } from '../../functions/delivery/held-delivery.js';
import { buildServices } from '../../functions/services.js';
import { loadReceiptSecret } from '../../functions/store/secret.js';
import { BlockedKeys } from '../../functions/sweep/blocked-keys.js';
import { HeldSweep } from '../../functions/sweep/held-sweep.js';
import { Sweeper } from '../../functions/sweep/sweeper.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * A held delivery's ack against the sweep (found by a chaos run): an ack that read the key's
 * lease live, and whose writes land after the lease ran out and the sweep failed the attempt,
 * must not answer `acked` while a retry of the message exists; and a failure that stopped before
 * its range write must not leave a copy in the hold area to deliver after its retry was acked.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime(
    { tenant: 'heldrace', queues: { o: { shards: 1, ordered: true, backoff_seconds: [0] } } },
    'test-admin-key-0123456789',
    { sweepIntervalMs: 60_000 },
  );
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe("a held delivery's ack slowed past its lease", () => {
  it('is stale when the sweep failed the attempt meanwhile', async () => {
    const { q, services, d, config, shard } = await heldDelivery('h');
    // The ack's first write (the key's) lands only after the sweep failed the expired lease, as
    // an ack slowed by an AWS outage's retries would.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const keys = Object.create(services.keys) as typeof services.keys;
    keys.endHeld = async (...args: Parameters<typeof services.keys.endHeld>) => {
      await gate;
      return services.keys.endHeld(...args);
    };
    const acking = new HeldDelivery({ ...heldDeps(services), keys });
    const answer = acking.ack('o', d);
    await new Promise((r) => setTimeout(r, 1200));
    expect(await new HeldSweep(services).sweep('o', config, shard)).toBe(1);
    open();
    // The attempt failed first: the ack is stale, and h-2's retry is delivered.
    expect(await answer).toBe('stale_receipt');
    await t.runtime.sweep.fire();
    const after = await q.receiveAll(1, 5000);
    expect(after.map((m) => [m.message_id, m.attempt])).toEqual([['h-2', 2]]);
  }, 30_000);
});

describe("a held delivery's ack that stops after it ended the lease", () => {
  it('is finished by the sweep: acked, the key free, nothing delivered again', async () => {
    const { q, services, d, config, shard } = await heldDelivery('s');
    // The ack's range write never comes: the process stopped after the key's write.
    const ranges = Object.create(services.ranges) as typeof services.ranges;
    ranges.ackHeld = () => new Promise(() => undefined);
    void new HeldDelivery({ ...heldDeps(services), ranges }).ack('o', d);
    await new Promise((r) => setTimeout(r, 1200));
    expect(await new HeldSweep(services).sweep('o', config, shard)).toBe(0);
    await q.produce([{ message_id: 's-3', key: 's', payload: 3 }]);
    await t.runtime.sweep.fire();
    const after = await q.receiveAll(1, 5000);
    expect(after.map((m) => m.message_id)).toEqual(['s-3']);
  }, 30_000);
});

describe("a held delivery's ack whose answer was lost", () => {
  it('answers acked when it is sent again, and leaves the key free', async () => {
    const { q, services, d } = await heldDelivery('l');
    // The key's write reaches DynamoDB and its answer is lost: the api answers 503.
    const keys = Object.create(services.keys) as typeof services.keys;
    keys.endHeld = async (...args: Parameters<typeof services.keys.endHeld>) => {
      await services.keys.endHeld(...args);
      throw Object.assign(new Error('injected: no answer in time'), { name: 'TimeoutError' });
    };
    await expect(new HeldDelivery({ ...heldDeps(services), keys }).ack('o', d)).rejects.toThrow('injected');
    // The client sends it again (the api answered 503): acked, not stale.
    expect(await services.held.ack('o', d)).toBe('acked');
    expect(await services.held.ack('o', d)).toBe('acked');
    await q.produce([{ message_id: 'l-3', key: 'l', payload: 3 }]);
    const after = await q.receiveAll(1, 5000);
    expect(after.map((m) => m.message_id)).toEqual(['l-3']);
  }, 30_000);

  it('is finished when a sweep that read the key before it removed the hold item', async () => {
    const { q, services, d, config, shard } = await heldDelivery('r');
    const before = await services.keys.getMany('o', ['r']);
    // The ack ends the lease and writes the range; its key's release fails.
    const keys = Object.create(services.keys) as typeof services.keys;
    keys.finishAck = () => Promise.reject(new Error('injected: the release fails'));
    await expect(new HeldDelivery({ ...heldDeps(services), keys }).ack('o', d)).rejects.toThrow('injected');
    // A sweep that read the key before the ack, once the lease ran out, finds the entry acked
    // and removes the hold item; the next sweep sees the key as the ack left it.
    await new Promise((r) => setTimeout(r, 1200));
    const stale = Object.create(services.keys) as typeof services.keys;
    stale.getMany = async () => before;
    expect(await new HeldSweep({ ...services, keys: stale }).sweep('o', config, shard)).toBe(0);
    expect(await new HeldSweep(services).sweep('o', config, shard)).toBe(0);
    await q.produce([{ message_id: 'r-3', key: 'r', payload: 3 }]);
    const after = await q.receiveAll(1, 5000);
    expect(after.map((m) => m.message_id)).toEqual(['r-3']);
  }, 30_000);
});

describe("a held delivery's failure that stops before its range write", () => {
  it('is not delivered again from the hold area once its retry was acked', async () => {
    const { q, services, d, config } = await heldDelivery('f');
    // The failure lands (its retry is written) but the range's write and the hold item's removal
    // never come: a fault, then the process gone.
    const ranges = Object.create(services.ranges) as typeof services.ranges;
    ranges.heldFailed = () => Promise.reject(new Error('injected: the range write fails'));
    const failing = new HeldDelivery({ ...heldDeps(services), ranges });
    await expect(failing.nack('o', config, d, { retryable: true, release: false })).rejects.toThrow(
      'injected',
    );
    // The sweep's pass appends the retry, but its look at the hold areas fails (the same faults),
    // so the retry is delivered and acked before anything finishes the failure.
    const heldSweep = new HeldSweep(services);
    heldSweep.sweep = () => Promise.reject(new Error('injected: the hold areas are out of reach'));
    const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
    const sweeper = new Sweeper({
      ...services,
      heldSweep,
      blockedKeys: new BlockedKeys(services),
      tenant: t.runtime.config.tenant,
      logger,
    });
    await expect(sweeper.sweepOnce()).rejects.toThrow('hold areas');
    const retry = await q.receiveAll(1, 5000);
    expect(retry.map((m) => [m.message_id, m.attempt])).toEqual([['f-2', 2]]);
    await q.ack(retry.map((m) => m.receipt));
    await q.produce([{ message_id: 'f-3', key: 'f', payload: 3 }]);
    const after = await q.receiveAll(1, 5000);
    expect(after.map((m) => m.message_id)).toEqual(['f-3']);
  }, 30_000);
});

/**
 * `${key}-1` and `${key}-2` produced with one key: the first received and acked, the second then
 * received from the key's hold area with a 1 s lease. Answers that delivery as the api reads its
 * receipt, and services to drive the ack and the sweep by hand.
 */
async function heldDelivery(key: string) {
  const q = queueApi(t, 'o');
  await q.produce([0, 1, 2].map((i) => ({ message_id: `${key}-${i}`, key, payload: i })));
  // The key's first message dead-lettered: the key is parked, and the sweep moves its later
  // messages into its hold area; a skip then lets them go from there, in order.
  const [poison] = await q.receiveAll(1, 10_000);
  await q.nack({ receipt: poison?.receipt, retryable: false, error: 'poison' });
  await t.runtime.sweep.fire();
  expect((await t.api(`/queues/o/keys/${key}/skip`, { body: { reason: 'test' } })).status).toBe(200);
  const [first] = await q.receiveAll(1, 10_000);
  expect(first?.message_id).toBe(`${key}-1`);
  await q.ack([first?.receipt as string]);
  const got = await t.api('/queues/o/receive', {
    body: { max_messages: 1, wait_seconds: 5, lease_seconds: 1 },
  });
  const second = got.body.messages[0];
  expect(second?.message_id).toBe(`${key}-2`);
  const services = buildServices(t.runtime.config, t.runtime.clients);
  const signer = new ReceiptSigner(
    await loadReceiptSecret(t.runtime.clients.doc, t.runtime.config.tableName),
  );
  const d = signer.verify(second.receipt, 'o');
  if (!d?.held) throw new Error(`${key}-2 was not delivered from the hold area`);
  const config = t.runtime.config.tenant.queues.o;
  if (!config) throw new Error('no queue o');
  const shard = (await t.records('o'))[0]?.shardId as string;
  return { q, services, d, config, shard };
}

function heldDeps(s: ReturnType<typeof buildServices>) {
  return (s.held as unknown as { deps: ConstructorParameters<typeof HeldDelivery>[0] }).deps;
}
