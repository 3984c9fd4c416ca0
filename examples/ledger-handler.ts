import { type Handler, NonRetryableError } from 'leaseq/client';
import type { ConsumerUnderTest, Environment } from 'leaseq/testing';

/**
 * A consumer that charges an order and books it: an idempotent handler, and a naive one that
 * does the same work without remembering what it did. Each gets its own "database" and
 * "payments API" from `ledger`, as the conformance kit needs a fresh one per scenario.
 */

export interface Order {
  account: string;
  amount: number;
}

/** What a handler can reach: a database and a payments API that deduplicates by idempotency key. */
export function ledger(env: Environment) {
  const balances = new Map<string, number>();
  /** Message ids booked, with their payload and when: kept for 30 days. */
  const booked = new Map<string, { payload: string; at: number }>();
  const charges = new Map<string, number>();
  const keys: string[] = [];
  return {
    env,
    balances,
    booked,
    charge: async (key: string, amount: number) => {
      keys.push(key);
      if (!charges.has(key)) charges.set(key, amount);
    },
    effect: () => ({ balances: Object.fromEntries(balances), charged: [...charges.values()] }),
    outboundKeys: () => keys,
  };
}

export type Ledger = ReturnType<typeof ledger>;

const KEEP_MS = 30 * 24 * 3600 * 1000;

/**
 * Idempotent on message_id: the charge carries a key made from the id (the payments API keeps
 * one charge per key), and the booking checks and records the id in one transaction, which
 * refuses an id seen with another payload.
 */
export function idempotent(db: Ledger): ConsumerUnderTest<Order> {
  const handler: Handler<Order> = async (m, ctx) => {
    const payload = JSON.stringify(m.payload);
    const seen = (at: number) => {
      const row = db.booked.get(m.message_id);
      if (!row || at - row.at > KEEP_MS) return false;
      if (row.payload !== payload)
        throw new NonRetryableError(`${m.message_id} was booked with another payload`);
      return true;
    };
    if (await ctx.call('db', async () => seen(db.env.now()))) return;
    await ctx.call('payments', () => db.charge(`order-${m.message_id}`, m.payload.amount));
    await ctx.call('db', async () => {
      const now = db.env.now();
      if (seen(now)) return;
      db.balances.set(m.payload.account, (db.balances.get(m.payload.account) ?? 0) + m.payload.amount);
      db.booked.set(m.message_id, { payload, at: now });
    });
  };
  return { handler, effect: db.effect, outboundKeys: db.outboundKeys };
}

/** Charges and books every delivery: a redelivered message is charged and booked twice. */
export function naive(db: Ledger): ConsumerUnderTest<Order> {
  const handler: Handler<Order> = async (m, ctx) => {
    await ctx.call('payments', () => db.charge(`order-${crypto.randomUUID()}`, m.payload.amount));
    await ctx.call('db', async () => {
      db.balances.set(m.payload.account, (db.balances.get(m.payload.account) ?? 0) + m.payload.amount);
    });
  };
  return { handler, effect: db.effect, outboundKeys: db.outboundKeys };
}
