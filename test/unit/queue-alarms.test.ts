import { describe, expect, it } from 'vitest';
import { parseTenantConfig } from '../../functions/core/config.js';
import {
  type AlarmState,
  changeNotice,
  evaluateAlarms,
  sameAlarmState,
} from '../../functions/observability/alarm-evaluation.js';
import { alarmMessage } from '../../functions/observability/alarm-message.js';
import { ALARM_OWNERS, OWNER_LABEL, slowHandlers } from '../../functions/observability/alarm-rules.js';
import {
  type AlarmReading,
  type QueueAlarm,
  queueAlarms,
} from '../../functions/observability/queue-alarms.js';
import { owned } from '../helpers/owned.js';

const tenant = parseTenantConfig(
  owned({
    tenant: 'acme',
    queues: {
      // Pulled by receive, a 72 h retention (alarms at 36 h).
      orders: { shards: 2, retention_hours: 72, dlq_retention_hours: 200 },
      // Pushed to a Lambda consumer: never received, so no receipts.
      events: { shards: 1, consumers: [{ name: 'billing', entry: 'x.ts', timeout_seconds: 30 }] },
      // Ordered: a stall and a parked key have alarms of their own, the consumer's keys too.
      ledger: { ordered: true, shards: 1, tier: 'critical' },
      feed: { ordered: true, shards: 1, consumers: [{ name: 'search', entry: 'x.ts' }] },
      scratch: { tier: 'ephemeral' },
    },
  }),
  'test',
);
const alarms = queueAlarms(tenant);
const byName = (name: string): QueueAlarm => {
  const found = alarms.find((a) => a.name === name);
  if (!found) throw new Error(`no alarm ${name}`);
  return found;
};

describe("the queues' alarms", () => {
  it('are made per queue, and per Lambda consumer for what its consumer does, named by tenant and namespace', () => {
    const names = alarms.map((a) => a.name);
    expect(new Set(names).size).toBe(names.length);
    const of = (ns: string) =>
      names
        .filter((n) => n.startsWith(`leaseq-acme/${ns}/`))
        .map((n) => n.split('/')[2])
        .sort();
    expect(of('orders')).toEqual(
      [
        'redelivery-rate',
        'handler-duration',
        'dlq-oldest-age',
        'dlq-expiring',
        'dlq-expired',
        'stale-receipt-rate',
        'oldest-unacked-age',
        'quota-throttled',
        'expired-unprocessed',
        'drift',
      ].sort(),
    );
    expect(of('ledger')).toEqual([...of('orders'), 'ordered-stall', 'parked-keys'].sort());
    // A pushed queue: its consumer's namespace has what the consumer does, the queue what it holds.
    expect(of('events')).toEqual(['drift', 'expired-unprocessed', 'oldest-unacked-age', 'quota-throttled']);
    expect(of('events~billing')).toEqual(
      ['dlq-expired', 'dlq-expiring', 'dlq-oldest-age', 'handler-duration', 'redelivery-rate'].sort(),
    );
    expect(of('feed~search')).toEqual([...of('events~billing'), 'ordered-stall', 'parked-keys'].sort());
    // An ephemeral queue's dead letters page nobody, and alarm nobody.
    expect(of('scratch').join()).not.toMatch(/dlq/);
  });

  it('start each description with its owner, and page as the tier says', () => {
    for (const a of alarms)
      expect(a.description).toMatch(new RegExp(`^${OWNER_LABEL[ALARM_OWNERS[a.kind]]}: `));
    expect(byName('leaseq-acme/ledger/dlq-oldest-age')).toMatchObject({ threshold: 900, pages: true });
    expect(byName('leaseq-acme/orders/dlq-oldest-age')).toMatchObject({ threshold: 3600, pages: true });
    expect(byName('leaseq-acme/orders/dlq-oldest-age').description).toMatch(/Owner: orders-team/);
    expect(byName('leaseq-acme/orders/dlq-expiring').threshold).toBe(200 * 3600 - 86_400);
    // A critical queue's lost records and lowered settings page; a standard one's do not.
    expect(byName('leaseq-acme/ledger/expired-unprocessed').pages).toBe(true);
    expect(byName('leaseq-acme/ledger/drift').pages).toBe(true);
    expect(byName('leaseq-acme/orders/expired-unprocessed').pages).toBe(false);
    expect(byName('leaseq-acme/orders/redelivery-rate').pages).toBe(false);
    // Half the retention: 36 h of 72.
    expect(byName('leaseq-acme/orders/oldest-unacked-age')).toMatchObject({
      threshold: 36 * 3600,
      forSeconds: 600,
    });
  });

  it('read the redelivery and stale-receipt shares from the counts, 0 under ten a minute, nothing without counts', () => {
    const redelivery = byName('leaseq-acme/orders/redelivery-rate');
    const counts = (c: NonNullable<AlarmReading['counts']>): AlarmReading => ({ gauges: {}, counts: c });
    expect(redelivery.measure(counts({ seconds: 60, delivered: 20, redelivered: 5 }))).toBe(25);
    expect(redelivery.measure(counts({ seconds: 60, delivered: 9, redelivered: 9 }))).toBe(0);
    // Over two minutes, twenty deliveries are the least that count.
    expect(redelivery.measure(counts({ seconds: 120, delivered: 19, redelivered: 19 }))).toBe(0);
    expect(redelivery.measure({ gauges: {} })).toBeUndefined();
    const stale = byName('leaseq-acme/orders/stale-receipt-rate');
    expect(stale.measure(counts({ seconds: 60, acked: 16, nacked: 2, stale_receipts: 2 }))).toBe(10);
    const throttled = byName('leaseq-acme/orders/quota-throttled');
    expect(throttled.measure(counts({ seconds: 60, throttled: 3 }))).toBe(3);
  });

  it("count a handler as slow past half its lease: the queue's lease_seconds, a consumer's timeout", () => {
    expect(slowHandlers([10, 30, 31, 59], 60)).toBe(2);
    const handler = byName('leaseq-acme/events~billing/handler-duration');
    expect(handler.description).toMatch(/15 s/);
    // One slow handler of fifty is 2 %, above the 1 % of a p99.
    expect(handler.measure({ gauges: {}, counts: { seconds: 60, handled: 50, slow_handled: 1 } })).toBe(2);
    expect(handler.measure({ gauges: {}, counts: { seconds: 60, handled: 0, slow_handled: 0 } })).toBe(0);
  });
});

describe('evaluating them', () => {
  const age = byName('leaseq-acme/orders/oldest-unacked-age');
  const dlq = byName('leaseq-acme/orders/dlq-oldest-age');
  const redelivery = byName('leaseq-acme/orders/redelivery-rate');
  const gauges = (g: AlarmReading['gauges']) => new Map([['orders', { gauges: g }]]);
  const minute = 60_000;

  it('fires an alarm on the first pass above its threshold when it needs no longer, and clears it on the first under', () => {
    let state: AlarmState = {};
    const first = evaluateAlarms([dlq], gauges({ dlq_oldest_age: 4000 }), state, 0);
    expect(first.changes.map((c) => [c.alarm.name, c.state, c.value])).toEqual([
      ['leaseq-acme/orders/dlq-oldest-age', 'ALARM', 4000],
    ]);
    state = first.state;
    // Still above: no second notice.
    const again = evaluateAlarms([dlq], gauges({ dlq_oldest_age: 4100 }), state, minute);
    expect(again.changes).toEqual([]);
    expect(sameAlarmState(again.state, state)).toBe(true);
    const cleared = evaluateAlarms([dlq], gauges({}), again.state, 2 * minute);
    expect(cleared.changes.map((c) => c.state)).toEqual(['OK']);
    expect(cleared.state).toEqual({});
  });

  it('fires an alarm that must last only once it has, and never one that dipped under meanwhile', () => {
    const above = gauges({ oldest_unacked_age: 40 * 3600 });
    let state = evaluateAlarms([age], above, {}, 0).state;
    expect(state[age.name]).toEqual({ since: 0, firing: false });
    const early = evaluateAlarms([age], above, state, 9 * minute);
    expect(early.changes).toEqual([]);
    const due = evaluateAlarms([age], above, early.state, 10 * minute);
    expect(due.changes.map((c) => c.state)).toEqual(['ALARM']);
    // A breach that did not last clears silently (it never fired) and starts again from scratch.
    state = evaluateAlarms([age], gauges({}), early.state, 9.5 * minute).state;
    expect(state).toEqual({});
    expect(evaluateAlarms([age], above, state, 10 * minute).changes).toEqual([]);
  });

  it('clears an alarm on a count only after 5 minutes without one, and never tells a second ALARM meanwhile', () => {
    const throttled = byName('leaseq-acme/orders/quota-throttled');
    const counts = (n: number) =>
      new Map([['orders', { gauges: {}, counts: { seconds: 60, throttled: n } }]]);
    const told: string[] = [];
    let state: AlarmState = {};
    for (const [minutes, n] of [
      [0, 3],
      [1, 0],
      [2, 0],
      [3, 1],
      [4, 0],
      [8, 0],
      [9, 0],
    ] as const) {
      const pass = evaluateAlarms([throttled], counts(n), state, minutes * minute);
      told.push(...pass.changes.map((c) => `${minutes}: ${c.state}`));
      state = pass.state;
    }
    // Under from minute 4 on: cleared at 9, not at 8.
    expect(told).toEqual(['0: ALARM', '9: OK']);
    expect(state).toEqual({});
  });

  it('keeps an alarm as it was on a pass with no data for it, as CloudWatch keeps a missing period', () => {
    const high = new Map([
      ['orders', { gauges: {}, counts: { seconds: 60, delivered: 100, redelivered: 50 } }],
    ]);
    let state = evaluateAlarms([redelivery], high, {}, 0).state;
    state = evaluateAlarms([redelivery], high, state, minute).state;
    expect(state[redelivery.name]?.firing).toBe(true);
    // A sweep's first pass after a restart has no counts to compare: no change either way.
    const restarted = evaluateAlarms([redelivery], gauges({}), state, 2 * minute);
    expect(restarted.changes).toEqual([]);
    expect(restarted.state).toEqual(state);
  });

  it("tells a change in the shape of CloudWatch's alarm messages, so the topic's filters route both alike", () => {
    const [change] = evaluateAlarms(
      [dlq],
      gauges({ dlq_oldest_age: 4000 }),
      {},
      Date.UTC(2026, 11, 6),
    ).changes;
    if (!change) throw new Error('no change');
    const { subject, body } = alarmMessage(changeNotice(change));
    expect(subject).toBe('ALARM: leaseq-acme/orders/dlq-oldest-age');
    expect(body).toMatchObject({
      AlarmName: 'leaseq-acme/orders/dlq-oldest-age',
      NewStateValue: 'ALARM',
      OldStateValue: 'OK',
      StateChangeTime: '2026-12-06T00:00:00.000Z',
      AlarmDescription: expect.stringMatching(/^For the consuming team: /),
    });
    expect(body.NewStateReason).toMatch(/4000, above 3600/);
  });
});
