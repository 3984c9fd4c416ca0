import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { checkRedelivery, RedeliveryConformanceError } from 'leaseq/testing';
import { idempotent, ledger, naive, type Order } from './ledger-handler.js';

// The redelivery conformance kit under node:test: `npx tsx --test examples/consumer-conformance.ts`.

const orders: fc.Arbitrary<Order> = fc.record({
  account: fc.constantFrom('a', 'b'),
  amount: fc.integer({ min: 1, max: 500 }),
});

test('an idempotent handler passes every check', async () => {
  await checkRedelivery({ setup: (env) => idempotent(ledger(env)), payloads: orders });
});

test('a naive handler fails, with the smallest case that shows it', async () => {
  const failure = await checkRedelivery({ setup: (env) => naive(ledger(env)), payloads: orders }).then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.ok(failure instanceof RedeliveryConformanceError);
  console.log(failure.message);
});
