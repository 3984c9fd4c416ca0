import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClients } from '../../functions/aws/clients.js';
import { FaultInjector } from '../../functions/aws/faults.js';
import { type FailedDelivery, Failures } from '../../functions/consume/failures.js';
import type { QueueConfig } from '../../functions/core/config.js';
import { buildServices } from '../../functions/services.js';
import { messagePk } from '../../functions/store/keys.js';
import type { MessageStore, StateItem } from '../../functions/store/messages.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * Two failures of one lease generation (a nack and the sweep's expiry, or a nack and its own
 * retry by the SDK) in every order that loses or keeps the history item: the attempt that
 * happened is in the history exactly once, and one that did not happen is not.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({ tenant: 'races', queues: { jobs: { shards: 1 } } });
});
afterAll(async () => {
  await t?.close();
});

// A name the tenant does not have: the runtime's own sweep never touches these messages.
const QUEUE = 'ghost';
const SHARD = 'shardId-000000000000';
const LEASE_MS = 60_000;

function config(): QueueConfig {
  return t.runtime.config.tenant.queues.jobs as QueueConfig;
}

/** A message admitted and leased once (generation 1, attempt 1), its lease live until `expiresAt`. */
async function leased(messages: MessageStore, id: string): Promise<{ item: StateItem; now: number }> {
  const now = Date.now();
  const at = new Date(now).toISOString();
  const envelope = {
    v: 1 as const,
    message_id: id,
    queue: QUEUE,
    produced_at: at,
    enqueued_at: at,
    attempt: 1,
    entry: 1,
    payload: 1,
  };
  expect((await messages.admit(SHARD, '1', envelope, now, now + 600_000)).result).toBe('admitted');
  const item = await messages.lease(
    { pk: messagePk(QUEUE, id), queue: QUEUE, shard: SHARD, message_id: id, entry: 1 },
    { deliveredAt: now, expiresAt: now + LEASE_MS, consumerId: 'c1' },
  );
  expect(item?.state).toBe('leased');
  return { item: item as StateItem, now };
}

function nackOf(item: StateItem, now: number): FailedDelivery {
  return { generation: item.gen, reason: 'nack', error: 'boom', deliveredAt: now, lease: 'live' };
}

function expiryOf(item: StateItem, now: number): FailedDelivery {
  return { generation: item.gen, reason: 'lease_expired', deliveredAt: now, lease: 'expired' };
}

interface Gate {
  /** The call starts only once this settles. */
  after?: Promise<unknown>;
  /** Told when the call has answered. */
  done?: () => void;
}

/** The store, with chosen calls held back until another party's step is done (a chosen interleaving). */
function steered(
  messages: MessageStore,
  gates: Partial<Record<'putHistory' | 'fail' | 'deleteHistory', Gate>>,
): MessageStore {
  return new Proxy(messages, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      const gate = gates[prop as keyof typeof gates];
      if (!gate) return value.bind(target);
      return async (...args: unknown[]) => {
        await gate.after;
        const out = await value.apply(target, args);
        gate.done?.();
        return out;
      };
    },
  });
}

function signal(): { promise: Promise<void>; fire: () => void } {
  let fire = () => {};
  const promise = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { promise, fire };
}

function services() {
  return buildServices(t.runtime.config, t.runtime.clients);
}

function failuresWith(messages: MessageStore): Failures {
  const { counters, keyOrder } = services();
  return new Failures({ messages, counters, keyOrder });
}

async function historyOf(id: string) {
  return services().messages.history(QUEUE, id);
}

describe('a nack and the sweep fail the same generation', () => {
  it("keeps the nack's history when the nack wrote it and the sweep's state write won", async () => {
    const { messages } = services();
    const { item, now } = await leased(messages, 'race-1');
    const nackWrote = signal();
    const sweepDone = signal();
    const nack = failuresWith(
      steered(messages, {
        putHistory: { done: nackWrote.fire },
        fail: { after: sweepDone.promise },
      }),
    );
    const sweep = failuresWith(steered(messages, { putHistory: { after: nackWrote.promise } }));

    const [nacked, expired] = await Promise.all([
      nack.fail(QUEUE, config(), item, nackOf(item, now), now + 1),
      sweep.fail(QUEUE, config(), item, expiryOf(item, now), now + LEASE_MS).finally(sweepDone.fire),
    ]);

    // The sweep's write ended the lease; the nack lost the race.
    expect(expired).toMatchObject({ kind: 'retry', nextAttempt: 2 });
    expect(nacked).toBeUndefined();
    expect(await messages.get(QUEUE, 'race-1')).toMatchObject({ state: 'delayed', attempt: 2, gen: 1 });
    // The one failed attempt, in the history once: the item the sweep's failure relies on.
    expect(await historyOf('race-1')).toEqual([
      expect.objectContaining({ generation: 1, attempt: 1, reason: 'nack', error: 'boom' }),
    ]);
  });

  it('puts the history back when the loser deletes it after the winner looked (the sweep lost to a live lease)', async () => {
    const { messages } = services();
    const { item, now } = await leased(messages, 'race-2');
    const sweepWrote = signal();
    const nackDone = signal();
    // The sweep read the lease as expired from the index; the lease is live at its write (extended).
    const sweep = failuresWith(
      steered(messages, {
        putHistory: { done: sweepWrote.fire },
        deleteHistory: { after: nackDone.promise },
      }),
    );
    const nack = failuresWith(steered(messages, { putHistory: { after: sweepWrote.promise } }));

    const [expired, nacked] = await Promise.all([
      sweep.fail(QUEUE, config(), item, expiryOf(item, now), now + 1),
      nack.fail(QUEUE, config(), item, nackOf(item, now), now + 2).finally(nackDone.fire),
    ]);

    expect(expired).toBeUndefined();
    expect(nacked).toMatchObject({ kind: 'retry', nextAttempt: 2 });
    expect(await historyOf('race-2')).toEqual([expect.objectContaining({ generation: 1, attempt: 1 })]);
  });

  it("writes the history again when the winner relied on an item that the loser deleted before the winner's write", async () => {
    const { messages } = services();
    const { item, now } = await leased(messages, 'race-3');
    const sweepWrote = signal();
    const nackWrote = signal();
    const sweepDone = signal();
    const sweep = failuresWith(
      steered(messages, {
        putHistory: { done: sweepWrote.fire },
        deleteHistory: { after: nackWrote.promise },
      }),
    );
    const nack = failuresWith(
      steered(messages, {
        putHistory: { after: sweepWrote.promise, done: nackWrote.fire },
        fail: { after: sweepDone.promise },
      }),
    );

    const [expired, nacked] = await Promise.all([
      sweep.fail(QUEUE, config(), item, expiryOf(item, now), now + 1).finally(sweepDone.fire),
      nack.fail(QUEUE, config(), item, nackOf(item, now), now + 2),
    ]);

    expect(expired).toBeUndefined();
    expect(nacked).toMatchObject({ kind: 'retry', nextAttempt: 2 });
    expect(await historyOf('race-3')).toEqual([
      expect.objectContaining({ generation: 1, attempt: 1, reason: 'nack', error: 'boom' }),
    ]);
  });

  it('still leaves no history when the sweep loses to an ack', async () => {
    const { messages } = services();
    const { item, now } = await leased(messages, 'race-4');
    const sweepWrote = signal();
    const acked = signal();
    const sweep = failuresWith(
      steered(messages, { putHistory: { done: sweepWrote.fire }, fail: { after: acked.promise } }),
    );
    const ack = sweepWrote.promise
      .then(() => messages.ack(QUEUE, 'race-4', item.gen, now + 1, now + 600_000))
      .finally(acked.fire);

    const [expired, ackAnswer] = await Promise.all([
      sweep.fail(QUEUE, config(), item, expiryOf(item, now), now + LEASE_MS),
      ack,
    ]);

    expect(ackAnswer.outcome).toBe('acked');
    expect(expired).toBeUndefined();
    expect(await historyOf('race-4')).toEqual([]);
  });
});

describe('a nack whose state write timed out after it landed', () => {
  it('keeps its attempt in the history when the SDK retry of the write is refused', async () => {
    const faults = new FaultInjector();
    const clients = createClients({ region: 'us-east-1', endpoints: t.runtime.endpoints, faults });
    try {
      const { messages, counters, keyOrder } = buildServices(t.runtime.config, clients);
      const { item, now } = await leased(messages, 'timeout-1');
      // The first state write reaches the table and loses its answer; the SDK sends it again,
      // and the condition (the lease `gen` is live) refuses the copy.
      // `random` decides, in order: inject (< rate), the kind, and that the request lands (< 0.5).
      const draws = [0, 0, 0];
      faults.rateFault = {
        rate: 0.5,
        kinds: ['timeout'],
        match: (op) => op === 'DynamoDB.UpdateItem',
        random: () => draws.shift() ?? 0.99,
      };
      const failures = new Failures({ messages, counters, keyOrder });
      await failures.fail(QUEUE, config(), item, nackOf(item, now), now + 1);
      expect(faults.injectedByKind.timeout).toBe(1);

      // The nack did happen: the message waits for attempt 2, and the history says why.
      expect(await messages.get(QUEUE, 'timeout-1')).toMatchObject({ state: 'delayed', attempt: 2, gen: 1 });
      expect(await historyOf('timeout-1')).toEqual([
        expect.objectContaining({ generation: 1, attempt: 1, reason: 'nack', error: 'boom' }),
      ]);
    } finally {
      clients.destroy();
    }
  });
});
