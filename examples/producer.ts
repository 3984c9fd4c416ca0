import { clientFromEnv, queue } from './env.js';

/**
 * Produces a few messages and prints what the queue answered for each.
 * LEASEQ_URL=http://127.0.0.1:4000 LEASEQ_KEY=$(cat .leaseq/admin-key) npx tsx examples/producer.ts
 */

const client = clientFromEnv();

const messages = [
  { payload: { order: 1001, total: 42 } },
  { payload: { order: 1002, total: 7 }, headers: { source: 'example' } },
  // A fixed id: running the example again answers `duplicate` for this one.
  { message_id: 'example-order-1003', payload: { order: 1003, total: 19 } },
  { payload: { order: 1004, total: 3 }, delay_seconds: 5 },
];

const results = await client.produce(queue, messages);
for (const r of results) {
  console.log(`${r.message_id}  ${r.status}${r.error ? `  ${r.error.code}: ${r.error.message}` : ''}`);
}
