import { NonRetryableError, Worker } from 'leaseq/client';
import { clientFromEnv, queue } from './env.js';

/**
 * A worker that logs each message and acks it; Ctrl-C stops it gracefully.
 * LEASEQ_URL=http://127.0.0.1:4000 LEASEQ_KEY=$(cat .leaseq/admin-key) npx tsx examples/worker.ts
 */

interface Order {
  order: number;
  total: number;
}

const worker = new Worker<Order>({
  client: clientFromEnv(),
  queue,
  concurrency: 4,
  handler: async (message, { signal }) => {
    // A message that can never succeed goes to the DLQ at once instead of using up its attempts.
    if (typeof message.payload?.order !== 'number') throw new NonRetryableError('not an order');
    console.log(`${message.message_id} attempt ${message.attempt}: order ${message.payload.order}`);
    // Real work checks the signal before committing: it aborts when the lease is lost.
    await new Promise((resolve) => setTimeout(resolve, 200));
    signal.throwIfAborted();
  },
  onError: (err, { phase, message }) =>
    console.error(`${phase}${message ? ` ${message.message_id}` : ''}: ${(err as Error).message}`),
});

worker.start();
console.log(`consuming ${queue}; Ctrl-C to stop`);

process.once('SIGINT', async () => {
  // The worker's long poll (up to 20 s) ends first, so it leases nothing after we leave.
  console.log('stopping: finishing the messages in hand; Ctrl-C again to quit at once');
  process.once('SIGINT', () => process.exit(130));
  await worker.stop({ timeoutMs: 25_000 });
  console.log('stopped');
});
