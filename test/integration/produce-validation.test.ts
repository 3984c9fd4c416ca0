import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../functions/core/auth.js';
import { startTestRuntime, TEST_TENANT, type TestRuntime } from '../helpers/runtime.js';
import { tableKeys } from '../helpers/table-state.js';

/** Every validation rule of produce: 4xx with the JSON path of the problem, and nothing written. */

const CONSUMER_KEY = 'consumer-only-key-0123456789';
let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    ...TEST_TENANT,
    api_keys: [
      { name: 'worker', sha256: hashApiKey(CONSUMER_KEY), scopes: ['consume:jobs', 'produce:ledger'] },
    ],
  });
});
afterAll(async () => {
  await t?.close();
});

async function writtenState() {
  return {
    items: (await tableKeys(t)).length,
    jobs: (await t.records('jobs')).length,
    ledger: (await t.records('ledger')).length,
  };
}

const valid = { message_id: 'ok-1', payload: { a: 1 } };

const cases: { name: string; queue?: string; body: unknown; status: number; code: string; path?: string }[] =
  [
    { name: 'no messages key', body: {}, status: 400, code: 'INVALID_REQUEST', path: 'messages' },
    { name: 'empty batch', body: { messages: [] }, status: 400, code: 'INVALID_REQUEST', path: 'messages' },
    {
      name: 'more than 500 messages',
      body: { messages: Array.from({ length: 501 }, () => ({ payload: 1 })) },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages',
    },
    {
      name: 'message_id with a bad character, after a valid message',
      body: { messages: [valid, { message_id: 'bad id!', payload: 1 }] },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages[1].message_id',
    },
    {
      name: 'message_id longer than 128',
      body: { messages: [{ message_id: 'a'.repeat(129), payload: 1 }] },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages[0].message_id',
    },
    {
      name: 'empty key',
      body: { messages: [{ key: '', payload: 1 }] },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages[0].key',
    },
    {
      name: 'key longer than 256',
      body: { messages: [{ key: 'k'.repeat(257), payload: 1 }] },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages[0].key',
    },
    {
      name: 'missing payload',
      body: { messages: [valid, { message_id: 'x' }] },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages[1].payload',
    },
    {
      name: 'more than 32 headers',
      body: {
        messages: [
          { payload: 1, headers: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`h${i}`, 'v'])) },
        ],
      },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages[0].headers',
    },
    {
      name: 'a header value that is not a string',
      body: { messages: [{ payload: 1, headers: { n: 5 } }] },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages[0].headers.n',
    },
    {
      name: 'delay_seconds over 15 minutes',
      body: { messages: [{ payload: 1, delay_seconds: 901 }] },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages[0].delay_seconds',
    },
    {
      name: 'negative delay_seconds',
      body: { messages: [{ payload: 1, delay_seconds: -1 }] },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages[0].delay_seconds',
    },
    {
      name: 'fractional delay_seconds',
      body: { messages: [{ payload: 1, delay_seconds: 1.5 }] },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages[0].delay_seconds',
    },
    {
      name: 'an unknown key in a message',
      body: { messages: [{ payload: 1, delay: 5 }] },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages[0].delay',
    },
    {
      name: 'an unknown top-level key',
      body: { messages: [valid], extra: true },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'extra',
    },
    {
      name: 'messages not an array',
      body: { messages: 'x' },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages',
    },
    {
      name: 'a body that is not JSON',
      body: '{"messages": [',
      status: 400,
      code: 'INVALID_REQUEST',
      path: '(body)',
    },
    {
      name: 'a JSON body that is not an object',
      body: '[1,2]',
      status: 400,
      code: 'INVALID_REQUEST',
      path: '(body)',
    },
    {
      name: 'an ordered queue message without a key',
      queue: 'ledger',
      body: { messages: [{ key: 'a', payload: 1 }, { payload: 2 }] },
      status: 400,
      code: 'INVALID_REQUEST',
      path: 'messages[1].key',
    },
  ];

describe('produce validation', () => {
  it.each(cases)('rejects $name and writes nothing', async ({ queue, body, status, code, path }) => {
    const before = await writtenState();
    const res = await t.api(`/queues/${queue ?? 'jobs'}/messages`, { body });
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    expect(typeof res.body.error.message).toBe('string');
    if (path) expect(res.body.error.details.issues.map((i: { path: string }) => i.path)).toContain(path);
    expect(await writtenState()).toEqual(before);
  });

  it('rejects a body over 5 MB with 413 and writes nothing', async () => {
    const before = await writtenState();
    const res = await t.api('/queues/jobs/messages', {
      body: { messages: [{ payload: 'x'.repeat(5 * 1024 * 1024) }] },
    });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await writtenState()).toEqual(before);
  });

  it('rejects a body that is not JSON by media type with 415', async () => {
    const res = await t.api('/queues/jobs/messages', {
      body: JSON.stringify({ messages: [valid] }),
      headers: { 'content-type': 'text/plain' },
    });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers 403 FORBIDDEN for a key without the produce scope of that queue, and writes nothing', async () => {
    const before = await writtenState();
    const res = await t.api('/queues/jobs/messages', { key: CONSUMER_KEY, body: { messages: [valid] } });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    expect(await writtenState()).toEqual(before);
    const allowed = await t.api('/queues/ledger/messages', {
      key: CONSUMER_KEY,
      body: { messages: [{ key: 'k', payload: 1 }] },
    });
    expect(allowed.body.results[0].status).toBe('accepted');
  });

  it('still accepts a valid request after every rejected one', async () => {
    const res = await t.api('/queues/jobs/messages', { body: { messages: [valid] } });
    expect(res.body.results).toEqual([{ message_id: 'ok-1', status: 'accepted' }]);
  });
});
