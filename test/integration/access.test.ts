import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../functions/api/app.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { tableKeys } from '../helpers/table-state.js';

/** Every route × every scope, and a fuzz of every route with random and hostile input. */

let t: TestRuntime;
const keys: Record<string, string> = {};
const SCOPES = [
  'produce:jobs',
  'consume:jobs',
  'admin:jobs',
  'admin:ledger',
  'produce:*',
  'consume:*',
  'admin:*',
];

beforeAll(async () => {
  t = await startTestRuntime();
  for (const scope of SCOPES) {
    const res = await t.api('/keys', { body: { name: scope.replace(/[:*]/g, '_'), scopes: [scope] } });
    keys[scope] = res.body.key;
  }
});
afterAll(async () => {
  await t?.close();
});

/** The action each route needs; tenant routes need admin on every queue. */
function required(path: string, method: string): string | undefined {
  // GET /queues takes any key: it answers the queues the key's scopes name (none is no error).
  if (path === '/health' || path === '/openapi.json' || path === '/queues') return undefined;
  // GET /usage without ?queue= is the tenant's (admin:<queue> with ?queue=: test/integration/usage.test.ts);
  // GET /alarms is every queue's.
  if (path.startsWith('/keys') || path === '/usage' || path === '/alarms') return 'admin:*';
  if (path === '/queues/{queue}/messages' && method === 'POST') return 'produce';
  if (/\/(receive|receive\/cancel|ack|nack|extend)$/.test(path)) return 'consume';
  return 'admin';
}

const concrete = (path: string) =>
  path
    .replace('{queue}', 'jobs')
    .replace('{message_id}', 'm-1')
    .replace('{redrive_id}', 'r-1')
    .replace('{key}', 'k-1')
    .replace('{name}', 'nobody');

describe('scopes on every route', () => {
  const cases = routes.flatMap((r) => SCOPES.map((scope) => ({ method: r.method, path: r.path, scope })));
  it.each(cases)('$method $path with $scope', async ({ method, path, scope }) => {
    const need = required(path, method);
    const res = await t.api(concrete(path), {
      method,
      key: keys[scope] as string,
      ...(method === 'POST' ? { body: {} } : {}),
    });
    const allowed =
      need === undefined ||
      scope === need ||
      (need !== 'admin:*' && (scope === `${need}:jobs` || scope === `${need}:*`));
    if (allowed) expect([401, 403]).not.toContain(res.status);
    else {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
  });
});

describe('GET /queues', () => {
  const listed = async (scope: string) =>
    (await t.api('/queues', { key: keys[scope] as string })).body.queues.map(
      (q: { name: string; actions: string[] }) => [q.name, q.actions],
    );

  it("answers the queues a key's scopes name, with what it may do on each", async () => {
    expect(await listed('produce:jobs')).toEqual([['jobs', ['produce']]]);
    expect(await listed('admin:ledger')).toEqual([['ledger', ['admin']]]);
    expect(await listed('consume:*')).toEqual([
      ['jobs', ['consume']],
      ['ledger', ['consume']],
    ]);
    expect((await t.api('/queues', { key: null })).status).toBe(401);
  });
});

/**
 * The owner's tools on a queue's message state take `?consumer=`; the audit trail and the pause
 * are the queue's (a pause holds every consumer of the queue).
 */
const QUEUE_WIDE = ['/queues/{queue}/audit', '/queues/{queue}/pause', '/queues/{queue}/resume'];
const takesConsumer = (path: string, method: string) =>
  required(path, method) === 'admin' && path.startsWith('/queues/') && !QUEUE_WIDE.includes(path);

describe('the consumer parameter on every route that takes it', () => {
  const scopes = ['admin:jobs', 'admin:*', 'admin:ledger', 'consume:jobs'];
  const cases = routes
    .filter((r) => takesConsumer(r.path, r.method))
    .flatMap((r) => scopes.map((scope) => ({ method: r.method, path: r.path, scope })));
  // jobs declares no consumer: the scope decides first, so only its admins learn that.
  it.each(cases)('$method $path?consumer= with $scope', async ({ method, path, scope }) => {
    const res = await t.api(`${concrete(path)}?consumer=billing`, {
      method,
      key: keys[scope] as string,
      ...(method === 'POST' ? { body: {} } : {}),
    });
    if (scope.startsWith('admin:') && scope !== 'admin:ledger') {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('CONSUMER_NOT_FOUND');
    } else {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
  });
});

async function stateSize(): Promise<number> {
  return (await tableKeys(t)).length + (await t.records('jobs')).length;
}

const hostileString = fc.oneof(
  fc.string(),
  fc.constantFrom(
    '__proto__',
    'constructor',
    '#pk',
    ':v',
    "'; DROP TABLE",
    '../..',
    '%00',
    '\u0000',
    'x'.repeat(5000),
  ),
);
const hostileJson = fc.oneof(
  fc.jsonValue(),
  fc.dictionary(hostileString, fc.jsonValue()),
  fc.record({ messages: fc.array(fc.dictionary(hostileString, fc.jsonValue()), { maxLength: 3 }) }),
  fc.record({ receipts: fc.array(hostileString, { maxLength: 3 }) }),
  fc.record({ receipt: hostileString, lease_seconds: fc.jsonValue() }),
  fc.constant(JSON.parse(`${'['.repeat(40)}1${']'.repeat(40)}`)),
);

describe('fuzz', () => {
  it('never answers 5xx, and a rejected request changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        hostileString,
        fc.oneof(
          hostileJson.map((v) => JSON.stringify(v)),
          fc.string(),
        ),
        fc.option(hostileString),
        async (route, param, body, consumer) => {
          const path =
            route.path.replace(/\{[a-z_]+\}/g, (m) =>
              m === '{queue}' ? 'jobs' : encodeURIComponent(param) || 'x',
            ) + (consumer === null ? '' : `?consumer=${encodeURIComponent(consumer)}`);
          const before = await stateSize();
          const res = await t.api(path, {
            method: route.method,
            ...(route.method === 'GET' ? {} : { body }),
          });
          expect(res.status, `${route.method} ${path.slice(0, 200)} ${body.slice(0, 200)}`).toBeLessThan(500);
          if (res.status >= 400) expect(await stateSize()).toBe(before);
        },
      ),
      { numRuns: 150 },
    );
  }, 120_000);
});
