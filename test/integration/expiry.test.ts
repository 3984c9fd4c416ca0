import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ShardReader } from '../../functions/log/shard-reader.js';
import { buildServices } from '../../functions/services.js';
import { ExpiryMarks } from '../../functions/store/expiry-marks.js';
import { ExpiryWatch } from '../../functions/sweep/expiry-watch.js';
import { countedKinesis } from '../helpers/counted-kinesis.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * expired_unprocessed: records about to leave the stream unadmitted are counted once.
 * Kinesis keeps records at least 24 h, so the watch is asked with a clock a retention ahead.
 */

let t: TestRuntime;

beforeAll(async () => {
  // Dispatch reads each shard once at start and then idles a minute: `stuck` is never admitted.
  t = await startTestRuntime(
    {
      tenant: 'expiry',
      queues: {
        stuck: { shards: 1, fast_admission: 'off' },
        kept: { shards: 1 },
        events: {
          shards: 1,
          consumers: [
            { name: 'billing', entry: 'test/fixtures/consumer-operations.ts', handler: 'billing' },
            { name: 'audit', entry: 'test/fixtures/consumer-operations.ts', handler: 'audit' },
          ],
        },
      },
    },
    undefined,
    { sweepIntervalMs: 100, idlePollMs: 60_000, wakePollers: false },
  );
  // Dispatch's first read of each shard is over before the tests produce (or it might admit `stuck`).
  await t.runtime.eventSource.drained(15_000);
});
afterAll(async () => {
  await t?.close();
});

/** A watch whose clock is `aheadMs` ahead; `pages` holds the record count each of its reads asked for. */
function watch(aheadMs: number) {
  const services = buildServices(t.runtime.config, t.runtime.clients);
  const pages: number[] = [];
  const counted = countedKinesis(t.runtime.clients.kinesis, (c) => {
    if (c.operation === 'GetRecords') pages.push(c.input.Limit ?? 0);
  });
  const expiry = new ExpiryWatch({
    ...services,
    reader: new ShardReader(counted),
    marks: new ExpiryMarks(t.runtime.clients.doc, t.runtime.config.tableName),
    now: () => Date.now() + aheadMs,
  });
  return { expiry, counters: services.counters, pages };
}

describe('expired_unprocessed', () => {
  it('counts records about to be trimmed before admission, once each, and none that were admitted', async () => {
    const config = t.runtime.config.tenant.queues;
    if (!config.stuck || !config.kept) throw new Error('queues missing');
    await queueApi(t, 'stuck').produce(Array.from({ length: 5 }, (_, n) => ({ payload: { n } })));
    await queueApi(t, 'kept').produce(Array.from({ length: 3 }, (_, n) => ({ payload: { n } })));

    const today = watch(0);
    expect(await today.expiry.check('stuck', config.stuck)).toEqual(new Map([['stuck', 0]]));
    // Nothing near its trim: the oldest record is all it reads.
    expect(today.pages).toEqual([1]);

    const retention = config.stuck.retention_hours * 3_600_000;
    const { expiry, counters } = watch(retention);
    expect(await expiry.check('stuck', config.stuck)).toEqual(new Map([['stuck', 5]]));
    expect(await expiry.check('stuck', config.stuck)).toEqual(new Map([['stuck', 0]]));
    expect(await expiry.check('kept', config.kept)).toEqual(new Map([['kept', 0]]));
    await counters.flush();
    expect((await queueApi(t, 'stuck').stats()).expired_unprocessed_total).toBe(5);
    expect((await queueApi(t, 'kept').stats()).expired_unprocessed_total).toBe(0);
  });

  it("counts, on a push queue, each Lambda consumer's records it never admitted", async () => {
    const config = t.runtime.config.tenant.queues.events;
    if (!config) throw new Error('queue missing');
    // The consumers' event source idles a minute after its first look: they admit none of these.
    await queueApi(t, 'events').produce(Array.from({ length: 3 }, (_, n) => ({ payload: { n } })));
    const { expiry, counters } = watch(config.retention_hours * 3_600_000);
    expect(await expiry.check('events', config)).toEqual(
      new Map([
        ['events~billing', 3],
        ['events~audit', 3],
      ]),
    );
    expect([...(await expiry.check('events', config)).values()]).toEqual([0, 0]);
    await counters.flush();
    expect((await queueApi(t, 'events').stats()).expired_unprocessed_total).toBe(6);
    const billing = await t.api('/queues/events/stats?consumer=billing');
    expect(billing.body.expired_unprocessed_total).toBe(3);
  });
});
