import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../functions/core/async.js';
import { parseTenantConfig } from '../../functions/core/config.js';
import { QUIET_BEFORE_OFF_MS } from '../../functions/core/fan-out-switch.js';
import { FanOutQuiet } from '../../functions/store/fan-out-quiet.js';
import { FanOutWatch } from '../../functions/sweep/fan-out-watch.js';
import { busyMappingName, LocalFanOutSwitch } from '../../infra/local/fan-out-switch.js';
import { queueApi } from '../helpers/queue-api.js';
import { FAST, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { until } from '../helpers/until.js';

/**
 * Busy-time fan-out (core/fan-out-switch.ts), the default: the sweep maps dispatch to its stream
 * on fan-out while produce outruns what the shard's passes admit at once, and unmaps it after a
 * quiet hour. As AWS runs it, so the shard refuses reads past five a second.
 */

const TENANT = {
  tenant: 'busy',
  queues: {
    // On the tenant's shared stream, `when_busy` by default; dispatch alone admits it.
    work: { fast_admission: 'off' },
    // A stream of its own that the runtime never switches: the watch below is given it as `when_busy`.
    side: { shards: 1, fast_admission: 'off', fan_out: false },
  },
};

let t: TestRuntime;
let stream: string;

beforeAll(async () => {
  t = await startTestRuntime(TENANT, undefined, {
    ...FAST,
    requestsIsolated: true,
    // The sweep ticks and gauges often, so a test need not wait a minute for a reading.
    sweepTickMs: 200,
    gaugeIntervalMs: 300,
  });
  stream = t.runtime.config.tenant.queues.work?.stream as string;
});
afterAll(async () => {
  await t?.close();
});

describe('fan-out when busy', () => {
  it('maps dispatch on fan-out once produce outruns the passes, and admits through it while every polling read is refused', async () => {
    const q = queueApi(t, 'work');
    expect(t.runtime.config.tenant.queues.work?.fan_out).toBe('when_busy');
    expect(t.runtime.eventSource.has(busyMappingName(stream))).toBe(false);
    // About 20 messages a second on one shard: past the 3 a second its passes admit at once.
    let n = 0;
    await until(async () => {
      await q.produce([{ message_id: `m${n++}`, payload: n }]);
      await sleep(50);
      return t.runtime.eventSource.has(busyMappingName(stream));
    }, 20_000);
    const ids = new Set<string>();
    await until(async () => {
      const got = await q.receive({ max_messages: 10 });
      for (const m of got) ids.add(m.message_id);
      if (got.length) await q.ack(got.map((m) => m.receipt));
      return ids.size === n;
    }, 20_000);

    // Every polling read refused (the shard's five taken): only the push's stand-in reads.
    t.faults.callFault = {
      match: (operation) => operation === 'Kinesis.GetRecords',
      errorName: 'ProvisionedThroughputExceededException',
      throttling: true,
    };
    try {
      await q.produce([{ message_id: 'pushed', payload: 1 }]);
      const got = await q.receive({ max_messages: 10, wait_seconds: 10 });
      expect(got.map((m) => m.message_id)).toEqual(['pushed']);
      await q.ack(got.map((m) => m.receipt));
    } finally {
      t.faults.clear();
    }
  });

  it('unmaps it after a quiet hour, counted across sweeps from the quiet start it stored', async () => {
    const tenant = parseTenantConfig({ ...TENANT, queues: { ...TENANT.queues, side: { shards: 1 } } });
    const side = tenant.queues.side?.stream as string;
    const fanOut = new LocalFanOutSwitch(t.runtime.eventSource, async () => undefined);
    const quiet = new FanOutQuiet(t.runtime.clients.doc, t.runtime.config.tableName);
    let now = Date.now();
    const watch = () =>
      new FanOutWatch({ tenant, switch: fanOut, quiet, logger: { info() {}, warn() {} }, now: () => now });
    const first = watch();
    await first.observe(new Map([['side', 0]]));
    expect(await fanOut.state(side)).toBe('off');
    now += 10_000;
    // 100 messages in 10 s on one shard: 10 a second.
    await first.observe(new Map([['side', 100]]));
    expect(await fanOut.state(side)).toBe('on');
    now += 10_000;
    await first.observe(new Map([['side', 100]]));
    expect((await quiet.all()).get(side)).toBe(now);
    const quietFrom = now;

    // A new sweep instance (no totals of its own yet) goes on from the stored start.
    now = quietFrom + QUIET_BEFORE_OFF_MS - 1;
    await watch().observe(new Map([['side', 100]]));
    expect(await fanOut.state(side)).toBe('on');
    now = quietFrom + QUIET_BEFORE_OFF_MS;
    await watch().observe(new Map([['side', 100]]));
    expect(await fanOut.state(side)).toBe('off');
    expect((await quiet.all()).has(side)).toBe(false);
    expect(t.runtime.eventSource.has(busyMappingName(side))).toBe(false);
  });
});
