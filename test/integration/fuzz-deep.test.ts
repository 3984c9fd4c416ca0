import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { tableKeys } from '../helpers/table-state.js';

/**
 * A fuzz that reaches each route's validation: every request is well addressed (a real queue,
 * the admin key) and starts from a valid body (the sample events of events/apigw/, and bodies
 * with receipts this runtime signed), with one field removed, replaced by a hostile value,
 * wrapped in an array, or joined by an unknown field. No answer is a 5xx, and a refused request
 * changes nothing. `LEASEQ_FUZZ_RUNS=100000 npx vitest run test/integration/fuzz-deep.test.ts`
 * runs it long, outside CI.
 */

const RUNS = Number(process.env.LEASEQ_FUZZ_RUNS ?? 300);
const SAMPLES_DIR = fileURLToPath(new URL('../../events/apigw/', import.meta.url));

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

interface Seed {
  method: string;
  path: string;
  body: Json;
}

/** The sample events with a JSON body: each a valid request of its route. */
const samples: Seed[] = readdirSync(SAMPLES_DIR)
  .filter((f) => f.endsWith('.json'))
  .map((f) => JSON.parse(readFileSync(`${SAMPLES_DIR}${f}`, 'utf8')) as APIGatewayProxyEventV2)
  .filter((e) => e.body && e.rawPath !== '/' && !e.rawPath.startsWith('/keys'))
  .map((e) => ({ method: e.requestContext.http.method, path: e.rawPath, body: JSON.parse(e.body ?? '') }));

let t: TestRuntime;
const seeds: Seed[] = [];

beforeAll(async () => {
  // No sweep: its bookkeeping (commit points, cursors) lands whenever it passes, which would
  // read as a refused request's change. The shard pollers still admit what produce appends.
  t = await startTestRuntime(undefined, undefined, {
    ...FAST,
    sweepIntervalMs: 3_600_000,
    sweepTickMs: 3_600_000,
  });
  // Receipts this runtime signed, so a mutation of the rest of the body is checked past the receipt.
  await t.api('/queues/jobs/messages', {
    body: { messages: [{ payload: 1 }, { payload: 2 }, { payload: 3 }] },
  });
  const got = await t.api('/queues/jobs/receive', { body: { max_messages: 3, wait_seconds: 1 } });
  const receipts: string[] = got.body.messages.map((m: { receipt: string }) => m.receipt);
  expect(receipts.length).toBeGreaterThan(0);
  const [receipt] = receipts;
  seeds.push(
    ...samples,
    { method: 'POST', path: '/queues/jobs/ack', body: { receipts } },
    { method: 'POST', path: '/queues/jobs/nack', body: { receipt: receipt ?? '', retry_after_seconds: 5 } },
    { method: 'POST', path: '/queues/jobs/extend', body: { receipt: receipt ?? '', lease_seconds: 30 } },
  );
});
afterAll(async () => {
  await t?.close();
});

/** Every item of the table by its key (less the counters: test/helpers/table-state.ts), and the streams' records. */
async function state(): Promise<string[]> {
  const keys = await tableKeys(t);
  const records = [...(await t.records('jobs')), ...(await t.records('ledger'))].map((r) => r.sequenceNumber);
  return [...keys, ...records].sort();
}

/** Every place in a JSON value, as a path of keys and indexes; [] is the value itself. */
function paths(value: Json, at: (string | number)[] = []): (string | number)[][] {
  const own = [at];
  if (Array.isArray(value)) return own.concat(...value.map((v, i) => paths(v, [...at, i])));
  if (value && typeof value === 'object')
    return own.concat(...Object.entries(value).map(([k, v]) => paths(v, [...at, k])));
  return own;
}

// Numbers stay where a valid value cannot make a request wait long (wait_seconds is at most 20).
const hostileValue: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(
    null,
    true,
    '',
    -1,
    0,
    0.5,
    -0.000001,
    1e9,
    2 ** 53 + 2,
    1e308,
    '__proto__',
    'constructor',
    '#pk',
    ':v',
    '\u0000',
    '../..',
    '2025-13-45T99:99:99Z',
    'x'.repeat(70_000),
    [],
    {},
    [[[[[[[[[[1]]]]]]]]]],
  ),
  fc.string({ maxLength: 40 }),
  fc.integer({ min: -3, max: 1 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>, {
    maxKeys: 3,
  }),
);

const mutation = fc.oneof(
  fc.record({ kind: fc.constant('delete' as const) }),
  fc.record({ kind: fc.constant('set' as const), value: hostileValue }),
  fc.record({ kind: fc.constant('wrap' as const) }),
  fc.record({ kind: fc.constant('extra' as const), name: fc.string({ maxLength: 20 }), value: hostileValue }),
);

type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

function mutate(body: Json, at: (string | number)[], m: Mutation): Json | undefined {
  if (at.length === 0) {
    if (m.kind === 'delete') return undefined;
    if (m.kind === 'set') return m.value;
    if (m.kind === 'wrap') return [body];
  }
  const copy = structuredClone(body);
  let parent: Json = copy;
  for (const step of at.slice(0, -1)) parent = (parent as Record<string, Json>)[step] as Json;
  const last = at.at(-1);
  const holder = parent as Record<string | number, Json>;
  if (m.kind === 'extra') {
    const target = last === undefined ? copy : holder[last];
    if (target && typeof target === 'object' && !Array.isArray(target)) target[m.name] = m.value;
    else return undefined;
    return copy;
  }
  if (last === undefined) return copy;
  if (m.kind === 'delete') {
    if (Array.isArray(holder)) holder.splice(Number(last), 1);
    else delete holder[last];
  } else if (m.kind === 'set') holder[last] = m.value;
  else holder[last] = [holder[last] as Json];
  return copy;
}

describe('deep fuzz', () => {
  it('of valid bodies, one field mutated: never a 5xx, and a refused request changes nothing', async () => {
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.nat(), mutation, async (which, where, m) => {
        const seed = seeds[which % seeds.length] as Seed;
        const places = paths(seed.body);
        const at = places[where % places.length] ?? [];
        const body = mutate(seed.body, at, m);
        // What an accepted produce appended is admitted first, so its admission is not counted here.
        await t.runtime.eventSource.drained(10_000);
        const before = await state();
        const res = await t.api(seed.path, {
          method: seed.method,
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const what = `${seed.method} ${seed.path} ${m.kind} ${JSON.stringify(at)}`;
        expect(res.status, what).toBeLessThan(500);
        if (res.status >= 400) {
          refused++;
          expect(res.body.error.code, what).toEqual(expect.any(String));
          expect(await state(), what).toEqual(before);
        }
      }),
      { numRuns: RUNS },
    );
    // Most mutations are refused: the fuzz reached the routes' validation, not a 404.
    expect(refused).toBeGreaterThan(RUNS / 3);
  }, 600_000);
});
