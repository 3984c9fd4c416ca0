import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationName, stackOf } from '../../functions/aws/sdk-client.js';
import { queueApi, type Received } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The stats endpoint's totals stay exact while receive and ack write no totals item of their own:
 * counts are summed in the instance and written about once a second, whatever the request rate.
 */

let t: TestRuntime;
/** Writes to the sharded totals items (`Q#<q>#T#<slot>`). */
let totalsWrites = 0;

beforeAll(async () => {
  t = await startTestRuntime({ tenant: 'totals', queues: { jobs: { shards: 2 } } });
  stackOf(t.runtime.clients.doc).add(
    (next, context) => async (args) => {
      const pk = args.input?.Key?.pk;
      if (operationName(context) === 'DynamoDB.UpdateItem' && /^Q#[^#]+#T#/.test(String(pk))) totalsWrites++;
      return next(args);
    },
    { step: 'initialize', name: 'testTotalsWrites' },
  );
});
afterAll(async () => {
  await t?.close();
});

describe('queue totals', () => {
  it('count produced and acked messages across shards, without a totals write per receive or ack', async () => {
    const q = queueApi(t, 'jobs');
    const ids = Array.from({ length: 20 }, (_, i) => `m-${i}`);
    await q.produce(ids.map((id) => ({ message_id: id, payload: { id } })));
    totalsWrites = 0;
    const started = Date.now();
    const got: Received[] = await q.receiveAll(ids.length, 10_000, { max_messages: 7 });
    const first = await q.ack(got.slice(0, 10).map((m) => m.receipt));
    const rest = await q.ack(got.slice(10).map((m) => m.receipt));
    expect([...first, ...rest].every((r) => r.status === 'acked')).toBe(true);
    // Acking again answers acked and counts nothing twice.
    await q.ack(got.slice(0, 3).map((m) => m.receipt));
    // At least six requests (three receives of 7, three acks); writes only with the seconds passing.
    const seconds = Math.ceil((Date.now() - started) / 1000);
    expect(totalsWrites, 'totals are written once a second, not per receive or ack').toBeLessThanOrEqual(
      seconds,
    );

    const stats = await q.stats();
    expect(stats.produced_total).toBe(20);
    expect(stats.acked_total).toBe(20);
    expect(stats.redelivered_total).toBe(0);
    expect(stats.in_flight).toBe(0);
  });
});
