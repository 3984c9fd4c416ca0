import { describe, expect, it } from 'vitest';
import type { Envelope } from '../../functions/core/envelope.js';
import { messageOf } from '../../functions/lambda-consumer/records.js';

const envelope: Envelope = {
  v: 1,
  message_id: 'm-1',
  queue: 'orders',
  key: 'k',
  produced_at: '2026-11-30T10:00:00.000Z',
  enqueued_at: '2026-11-30T10:00:01.000Z',
  attempt: 2,
  entry: 2,
  payload: { a: 1 },
};

describe("a Lambda consumer's view of a message", () => {
  it("carries the producer's trace context and the schema version when the envelope has them", () => {
    const traced = { ...envelope, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };
    expect(messageOf({ ...traced, schema_ref: 'orders/v2' }, { a: 1 }, 2)).toEqual({
      message_id: 'm-1',
      key: 'k',
      payload: { a: 1 },
      headers: {},
      attempt: 2,
      enqueued_at: '2026-11-30T10:00:00.000Z',
      schema_ref: 'orders/v2',
      traceparent: traced.traceparent,
    });
    const plain = messageOf(envelope, { a: 1 }, 1);
    expect('traceparent' in plain || 'schema_ref' in plain).toBe(false);
  });
});
