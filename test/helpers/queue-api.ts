import { expect } from 'vitest';
import type { ApiAnswer, TestRuntime } from './runtime.js';

/** Thin calls of one queue's HTTP API for tests; every call goes over HTTP to the runtime. */

export interface Received {
  message_id: string;
  receipt: string;
  key: string | null;
  // biome-ignore lint/suspicious/noExplicitAny: payloads are whatever the test produced.
  payload: any;
  headers: Record<string, string>;
  attempt: number;
  enqueued_at: string;
  lease_expires_at: string;
  replay_id?: string;
}

export function queueApi(t: Pick<TestRuntime, 'api'>, queue: string) {
  const post = (path: string, body: unknown) => t.api(`/queues/${queue}/${path}`, { body });
  const ok = (res: ApiAnswer) => {
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };
  return {
    async produce(
      messages: unknown[],
    ): Promise<
      { message_id: string; status: string; error?: { code: string; message: string; retryable: boolean } }[]
    > {
      return ok(await post('messages', { messages })).results;
    },
    async receive(body: Record<string, unknown> = {}): Promise<Received[]> {
      return ok(await post('receive', body)).messages;
    },
    async ack(receipts: string[]): Promise<{ receipt: string; status: string }[]> {
      return ok(await post('ack', { receipts })).results;
    },
    nack: (body: Record<string, unknown>) => post('nack', body),
    extend: (body: Record<string, unknown>) => post('extend', body),
    async stats() {
      return ok(await t.api(`/queues/${queue}/stats`));
    },
    dlq: (id?: string) => t.api(`/queues/${queue}/dlq${id ? `/${encodeURIComponent(id)}` : ''}`),
    /** Receives until `count` messages arrived or `timeoutMs` passed. */
    async receiveAll(
      count: number,
      timeoutMs: number,
      body: Record<string, unknown> = {},
    ): Promise<Received[]> {
      const got: Received[] = [];
      const deadline = Date.now() + timeoutMs;
      while (got.length < count && Date.now() < deadline) {
        got.push(...(await this.receive({ max_messages: 100, wait_seconds: 1, ...body })));
      }
      return got;
    },
  };
}
