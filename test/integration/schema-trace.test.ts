import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * A queue's payload schema checked at produce (each message on its own), its version and the
 * producer's trace context carried to every delivery and shown by trace.
 */

const ORDER_SCHEMA = {
  type: 'object',
  properties: {
    order_id: { type: 'string', minLength: 1 },
    amount: { type: 'number', minimum: 0 },
    placed_at: { type: 'string', format: 'date-time' },
  },
  required: ['order_id', 'amount'],
  additionalProperties: false,
};
const TRACE_A = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const TRACE_B = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'schemas',
    queues: {
      orders: { shards: 1, schema: ORDER_SCHEMA, schema_ref: 'orders/v2' },
      plain: { shards: 1 },
    },
  });
});
afterAll(async () => {
  await t?.close();
});

describe('a queue with a payload schema', () => {
  it('answers a message the schema refuses `failed`, not retryable, and accepts the rest of its batch', async () => {
    const q = queueApi(t, 'orders');
    const results = await q.produce([
      { message_id: 'o-1', payload: { order_id: 'A1', amount: 12.5, placed_at: '2026-11-30T10:00:00Z' } },
      { message_id: 'o-2', payload: { order_id: 'A2', amount: 'twelve' } },
      { message_id: 'o-3', payload: { order_id: 'A3', amount: 3, placed_at: 'yesterday', coupon: 'X' } },
      { message_id: 'o-4', payload: { order_id: 'A4', amount: 0 } },
    ]);
    expect(results.map((r) => r.status)).toEqual(['accepted', 'failed', 'failed', 'accepted']);
    expect(results[1]).toMatchObject({
      error: { code: 'SCHEMA_VALIDATION_FAILED', retryable: false, message: 'payload/amount must be number' },
    });
    const third = results[2]?.error?.message ?? '';
    expect(third).toContain('payload/placed_at must match format "date-time"');
    expect(third).toContain('must NOT have additional properties');

    const got = await q.receiveAll(2, 10_000);
    expect(got.map((m) => m.message_id).sort()).toEqual(['o-1', 'o-4']);
    for (const m of got) expect(m).toMatchObject({ schema_ref: 'orders/v2' });
    expect(await q.ack(got.map((m) => m.receipt))).toHaveLength(2);
    // A refused message was never appended: its id is free for a corrected copy.
    const again = await q.produce([{ message_id: 'o-2', payload: { order_id: 'A2', amount: 12 } }]);
    expect(again.map((r) => r.status)).toEqual(['accepted']);
    const fixed = await q.receiveAll(1, 10_000);
    expect(fixed.map((m) => m.payload)).toEqual([{ order_id: 'A2', amount: 12 }]);
    await q.ack(fixed.map((m) => m.receipt));
  });

  it('leaves a queue without a schema as it was: any payload, no schema_ref', async () => {
    const q = queueApi(t, 'plain');
    expect((await q.produce([{ payload: 'anything' }])).map((r) => r.status)).toEqual(['accepted']);
    const [m] = await q.receiveAll(1, 10_000);
    expect(m?.payload).toBe('anything');
    expect(m && 'schema_ref' in m).toBe(false);
    await q.ack([m?.receipt as string]);
  });
});

describe('the producer trace context', () => {
  it('goes from produce (field, or the request header for messages without one) to the delivery and to trace', async () => {
    const q = queueApi(t, 'plain');
    const res = await t.api('/queues/plain/messages', {
      body: {
        messages: [
          { message_id: 't-1', payload: 1 },
          { message_id: 't-2', payload: 2, traceparent: TRACE_B },
        ],
      },
      headers: { traceparent: TRACE_A },
    });
    expect(res.status).toBe(200);
    const got = await q.receiveAll(2, 10_000);
    const byId = Object.fromEntries(
      got.map((m) => [m.message_id, (m as { traceparent?: string }).traceparent]),
    );
    expect(byId).toEqual({ 't-1': TRACE_A, 't-2': TRACE_B });
    await q.ack(got.map((m) => m.receipt));
    const trace = await t.api('/queues/plain/messages/t-1');
    expect(trace.body).toMatchObject({ message_id: 't-1', state: 'acked', traceparent: TRACE_A });
  });

  it('refuses a malformed trace context in a message or the header, accepting nothing of the request', async () => {
    const inBody = await t.api('/queues/plain/messages', {
      body: { messages: [{ message_id: 'bad-1', payload: 1, traceparent: '00-xyz-01' }] },
    });
    expect(inBody.status).toBe(400);
    expect(inBody.body.error.code).toBe('INVALID_REQUEST');
    expect(inBody.body.error.details.issues[0].path).toBe('messages[0].traceparent');
    const inHeader = await t.api('/queues/plain/messages', {
      body: { messages: [{ message_id: 'bad-2', payload: 1 }] },
      headers: { traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` },
    });
    expect(inHeader.status).toBe(400);
    expect(inHeader.body.error.details.issues[0].path).toBe('headers.traceparent');
    for (const id of ['bad-1', 'bad-2'])
      expect((await t.api(`/queues/plain/messages/${id}`)).status).toBe(404);
  });
});
