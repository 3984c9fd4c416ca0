import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import * as z from 'zod/mini';
import type { ProduceMessage, ReceivedMessage } from '../../client/index.js';
import type { DeliveredMessage } from '../../functions/wire/responses.js';
import { deliveredMessageSchema } from '../../functions/wire/responses.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { clientOf, until } from './support.js';

/**
 * The client's types are the wire's (functions/wire/): a delivery carrying every field the server
 * sends, received by LeaseqClient from a real local runtime, has no key the client's
 * `ReceivedMessage` lacks, checked by the type checker and at run time.
 */

/** Every field of a delivery; the type checker holds this list to `keyof ReceivedMessage`. */
const RECEIVED_FIELDS = [
  'message_id',
  'receipt',
  'key',
  'payload',
  'headers',
  'attempt',
  'enqueued_at',
  'lease_expires_at',
  'attributes',
  'schema_ref',
  'traceparent',
  'replay_id',
] as const satisfies readonly (keyof ReceivedMessage)[];

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'wire',
    queues: {
      orders: {
        shards: 1,
        schema: { type: 'object', required: ['order_id'] },
        schema_ref: 'orders/v1',
      },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

describe("the client's wire types", () => {
  it('name every field of a delivery, as the wire schema does', () => {
    expectTypeOf<(typeof RECEIVED_FIELDS)[number]>().toEqualTypeOf<keyof ReceivedMessage>();
    expectTypeOf<keyof ReceivedMessage>().toEqualTypeOf<keyof DeliveredMessage>();
    expectTypeOf<ReceivedMessage<{ order_id: string }>['payload']>().toEqualTypeOf<{ order_id: string }>();
    expectTypeOf<Omit<ReceivedMessage, 'payload'>>().toEqualTypeOf<Omit<DeliveredMessage, 'payload'>>();
    expectTypeOf<ProduceMessage>().toHaveProperty('traceparent');
    expectTypeOf<ProduceMessage>().toHaveProperty('attributes');
    const documented = Object.keys(
      (z.toJSONSchema(deliveredMessageSchema) as { properties: Record<string, unknown> }).properties,
    );
    expect(documented.sort()).toEqual([...RECEIVED_FIELDS].sort());
  });

  it('carry every field the server sends with a delivery: a replay of a traced, typed, schema-checked message', async () => {
    const client = clientOf(t);
    const from = new Date(Date.now() - 1000).toISOString();
    const message: ProduceMessage<{ order_id: string }> = {
      message_id: 'w-1',
      key: 'customer-1',
      payload: { order_id: 'A1' },
      headers: { origin: 'wire-test' },
      attributes: { region: { data_type: 'String', string_value: 'eu' } },
      traceparent: TRACEPARENT,
    };
    expect((await client.produce('orders', [message])).map((r) => r.status)).toEqual(['accepted']);
    const [first] = await client.receive<{ order_id: string }>('orders', { wait_seconds: 5 });
    expect(first?.message_id).toBe('w-1');
    await client.ack('orders', [first?.receipt as string]);

    const replay = await client.replay('orders', { from, rate_per_sec: 1000 });
    let copy: ReceivedMessage<{ order_id: string }> | undefined;
    await until(
      "the replay's copy",
      async () => {
        [copy] = await client.receive<{ order_id: string }>('orders', { wait_seconds: 1 });
        return copy !== undefined;
      },
      20_000,
    );
    if (!copy) throw new Error('no copy');
    await client.ack('orders', [copy.receipt]);

    expect(copy).toMatchObject({
      message_id: 'w-1',
      key: 'customer-1',
      payload: { order_id: 'A1' },
      headers: { origin: 'wire-test' },
      attributes: message.attributes,
      schema_ref: 'orders/v1',
      traceparent: TRACEPARENT,
      replay_id: replay.replay_id,
    });
    // Every key the server sent is one the client's type names, and the answer carried them all.
    const known: readonly string[] = RECEIVED_FIELDS;
    expect(Object.keys(copy).filter((k) => !known.includes(k))).toEqual([]);
    expect(Object.keys(copy).sort()).toEqual([...RECEIVED_FIELDS].sort());
  });
});
