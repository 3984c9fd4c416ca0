import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BatchHandler, type Handler, NonRetryableError } from '../../client/index.js';
import {
  type ConsumerUnderTest,
  checkRedelivery,
  type Environment,
  type RedeliveryCheck,
  RedeliveryConformanceError,
} from '../../client/testing/index.js';
import { idempotent, ledger, type Order } from '../../examples/ledger-handler.js';

/**
 * The redelivery conformance kit (leaseq/testing) against handlers with one seeded bug each: it
 * must name the check each one fails, and pass the correct handler.
 */

const orders: fc.Arbitrary<Order> = fc.record({
  account: fc.constantFrom('a', 'b'),
  amount: fc.integer({ min: 1, max: 500 }),
});

async function failure(setup: (env: Environment) => ConsumerUnderTest<Order>, ordered = false) {
  // A set shows a reordering only with two messages of a key that the scheduler swaps, about one
  // set in five: 300 sets all miss it with odds under 1e-27.
  const err = await checkRedelivery({ setup, payloads: orders, ordered, runs: ordered ? 300 : 50 }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RedeliveryConformanceError);
  return err as RedeliveryConformanceError;
}

const book = (db: ReturnType<typeof ledger>, m: { payload: Order }) =>
  db.balances.set(m.payload.account, (db.balances.get(m.payload.account) ?? 0) + m.payload.amount);

/** The correct handler with a change: `mark` keeps an id for `keepMs` and books after checking it. */
function consumer(
  db: ReturnType<typeof ledger>,
  bug: 'none' | 'dedup-after-effect' | 'random-key' | 'short-ttl',
): ConsumerUnderTest<Order> {
  const keepMs = bug === 'short-ttl' ? 3600_000 : 30 * 24 * 3600_000;
  const handler: Handler<Order> = async (m, ctx) => {
    const payload = JSON.stringify(m.payload);
    const seen = () => {
      const row = db.booked.get(m.message_id);
      if (!row || db.env.now() - row.at > keepMs) return false;
      if (row.payload !== payload) throw new NonRetryableError('booked with another payload');
      return true;
    };
    if (await ctx.call('db', async () => seen())) return;
    const key = bug === 'random-key' ? crypto.randomUUID() : `order-${m.message_id}`;
    await ctx.call('payments', () => db.charge(key, m.payload.amount));
    if (bug === 'dedup-after-effect') {
      await ctx.call('db', async () => book(db, m));
      await ctx.call('db', async () => db.booked.set(m.message_id, { payload, at: db.env.now() }));
      return;
    }
    await ctx.call('db', async () => {
      if (seen()) return;
      book(db, m);
      db.booked.set(m.message_id, { payload, at: db.env.now() });
    });
  };
  return { handler, effect: db.effect, outboundKeys: db.outboundKeys };
}

/** An ordered queue's batch handler that appends each message to its key's log, deduplicated. */
function keyLog(parallel: boolean) {
  return (): ConsumerUnderTest<Order> => {
    const log = new Map<string, number[]>();
    const seen = new Map<string, string>();
    const apply = (m: { message_id: string; key: string | null; payload: Order }) => {
      const payload = JSON.stringify(m.payload);
      const before = seen.get(m.message_id);
      if (before !== undefined && before !== payload)
        throw new NonRetryableError('seen with another payload');
      if (before !== undefined) return;
      const key = m.key ?? '';
      log.set(key, [...(log.get(key) ?? []), m.payload.amount]);
      seen.set(m.message_id, payload);
    };
    const batchHandler: BatchHandler<Order> = async (messages, ctx) => {
      if (parallel) {
        await Promise.all(messages.map((m) => ctx.call('db', async () => apply(m))));
        return [];
      }
      // In turn; once a message fails, the rest of its key fail with it, so nothing overtakes it.
      const failures: { message: (typeof messages)[number]; error: unknown }[] = [];
      const failed = new Set<string | null>();
      for (const m of messages) {
        if (failed.has(m.key)) {
          failures.push({ message: m, error: new Error('an earlier message of its key failed') });
          continue;
        }
        try {
          await ctx.call('db', async () => apply(m));
        } catch (error) {
          failed.add(m.key);
          failures.push({ message: m, error });
        }
      }
      return failures;
    };
    return { batchHandler, effect: () => Object.fromEntries(log) };
  };
}

describe('the redelivery conformance kit', () => {
  it('passes an idempotent handler, unordered, and an ordered batch handler that keeps each key in turn', async () => {
    await checkRedelivery({ setup: (env) => idempotent(ledger(env)), payloads: orders, runs: 30 });
    await checkRedelivery({ setup: keyLog(false), payloads: orders, ordered: true, runs: 30 });
  });

  const seeded: [
    string,
    (env: Environment) => ConsumerUnderTest<Order>,
    RedeliveryCheck,
    RegExp,
    boolean?,
  ][] = [
    [
      'no dedup',
      (env) => {
        const db = ledger(env);
        return {
          handler: async (m, ctx) => ctx.call('db', async () => void book(db, m)),
          effect: db.effect,
        };
      },
      'repeat',
      /delivered again after all of them were acked/,
    ],
    [
      'dedup after the effect',
      (env) => consumer(ledger(env), 'dedup-after-effect'),
      'crash',
      /m-1 crashed after call 3 of 4, then was delivered again/,
    ],
    [
      'an outbound key made per attempt',
      (env) => consumer(ledger(env), 'random-key'),
      'outbound-keys',
      /where one delivery sends 1 idempotency key/,
    ],
    [
      'a dedup TTL shorter than the redelivery horizon',
      (env) => consumer(ledger(env), 'short-ttl'),
      'horizon',
      /delivered again 360 h later/,
    ],
    ['order broken by parallel calls', keyLog(true), 'order', /as one delivery/, true],
  ];
  it.each(seeded)('catches %s', async (_, setup, check, report, ordered) => {
    const err = await failure(setup, ordered);
    expect(err.check).toBe(check);
    expect(err.message).toMatch(report);
    // Shrunk to the smallest set of messages that shows it.
    expect(err.message).toMatch(/smallest messages that show it/);
  });

  it('catches a handler that takes an id it saw with another payload', async () => {
    const err = await failure((env) => {
      const db = ledger(env);
      const seen = new Set<string>();
      return {
        handler: async (m, ctx) =>
          ctx.call('db', async () => {
            if (seen.has(m.message_id)) return;
            seen.add(m.message_id);
            book(db, m);
          }),
        effect: db.effect,
      };
    });
    expect(err.check).toBe('conflict');
    expect(err.message).toMatch(/came again with another payload .* and was acked: it must be refused/);
  });

  it('runs under node:test: the example passes its idempotent handler and reports the naive one', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--test', 'examples/consumer-conformance.ts'],
      { cwd: new URL('../../', import.meta.url).pathname },
    );
    expect(stdout).toMatch(/# pass 2/);
    expect(stdout).toMatch(/# fail 0/);
    expect(stdout).toMatch(/redelivery conformance: repeat failed/);
  });
});
