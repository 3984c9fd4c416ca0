import { consumerNamespace, type TenantConfig } from '../core/config.js';
import { hourOf, nextUsageSample, type UsageReading, usageSampleOf } from '../core/usage-sample.js';
import { type AlarmChange, evaluateAlarms, sameAlarmState } from '../observability/alarm-evaluation.js';
import type { AlarmedGauge, GaugeName, ShownGauge } from '../observability/metrics.js';
import {
  ALARM_COUNTS,
  type AlarmReading,
  type QueueAlarm,
  queueAlarms,
} from '../observability/queue-alarms.js';
import type { Services } from '../services.js';
import type { AlarmStates } from '../store/alarm-states.js';
import type { UsageRollups } from '../store/usage-rollups.js';
import type { DriftCheck } from './drift-check.js';
import type { ExpiryWatch } from './expiry-watch.js';

export interface GaugesDeps {
  tenant: TenantConfig;
  services: Pick<Services, 'storage' | 'stats' | 'samples' | 'retentions'>;
  rollups: Pick<UsageRollups, 'put'>;
  expiryWatch: Pick<ExpiryWatch, 'check'>;
  drift: Pick<DriftCheck, 'check'>;
  /**
   * Where a namespace's gauges go, on a pass where any is not 0: a log line (sweep/app.ts). As
   * CloudWatch metrics they billed $0.30 a gauge-month while not 0, for graphs nobody alarms on.
   */
  record(namespace: string, gauges: Partial<Record<GaugeName, number>>): void;
  /** The queues' alarms' state, and who hears of each change (the tenant's alarm topic). */
  alarmStates: Pick<AlarmStates, 'get' | 'put'>;
  notify(change: AlarmChange): Promise<void>;
}

/**
 * The gauges the alarms read, for every queue and Lambda consumer: what its
 * stats count, the records that left the log unadmitted, and the settings found lowered (drift).
 * The sweep records them about once a minute; on the way it frees the bytes of dead letters
 * whose retention ended (counting them) and samples the totals the stats' drain rates and the
 * usage come from (core/usage-sample.ts). Then it evaluates the queues' alarms on what it read
 * (observability/queue-alarms.ts) and tells the alarm topic what changed.
 */
export class Gauges {
  private readonly alarms: QueueAlarm[];
  /** Each namespace's running totals at the pass before, which its rates are read against. */
  private readonly previous = new Map<string, { at: number; totals: Record<string, number> }>();

  constructor(private readonly deps: GaugesDeps) {
    this.alarms = queueAlarms(deps.tenant);
  }

  /** Publishes every queue's gauges; answers each queue's produced total, which the fan-out watch reads. */
  async publish(): Promise<Map<string, number>> {
    const { services } = this.deps;
    const produced = new Map<string, number>();
    const readings = new Map<string, AlarmReading>();
    /** A namespace's gauges, recorded, and what its alarms read. */
    const read = (
      namespace: string,
      shown: Partial<Record<ShownGauge, number>>,
      gauges: Partial<Record<AlarmedGauge, number>>,
      totals: Record<string, number>,
    ) => {
      const all = { ...shown, ...gauges };
      if (Object.values(all).some((value) => value)) this.deps.record(namespace, all);
      readings.set(namespace, { gauges, ...this.countsSince(namespace, totals) });
    };
    const drift = await this.deps.drift.check();
    for (const [queue, queueConfig] of Object.entries(this.deps.tenant.queues)) {
      // A DLQ retention raised in the tenant file reaches the dead letters already there; dead
      // letters whose retention ended free their bytes (DynamoDB's TTL deletes them unseen).
      const dlqExpired = new Map<string, number>();
      let dlqBytes = 0;
      for (const namespace of [
        queue,
        ...queueConfig.consumers.map((c) => consumerNamespace(queue, c.name)),
      ]) {
        await services.retentions.follow(namespace, queueConfig);
        const dead = await services.storage.expireDeadLetters(namespace, Date.now());
        dlqExpired.set(namespace, dead.letters);
        dlqBytes += dead.held;
      }
      // Counted into the totals first, published as this interval's new ones (the alarm clears after).
      const expired = await this.deps.expiryWatch.check(queue, queueConfig);
      const expiredTotal = [...expired.values()].reduce((a, n) => a + n, 0);
      const { stats: s, totals, sampled } = await services.stats.sweepLook(queue, queueConfig);
      produced.set(queue, s.produced_total);
      // The stats' drain rates and the usage come from these, a gauge interval apart (none for an
      // unused queue).
      if (s.produced_total || s.acked_total)
        await this.sample(queue, sampled, {
          at: Date.now(),
          totals,
          storedBytes: s.stored_bytes,
          dlqBytes,
        });
      read(
        queue,
        { depth: s.depth, in_flight: s.in_flight, delayed: s.delayed, dlq_depth: s.dlq_depth },
        {
          oldest_unacked_age: s.oldest_unacked_age_seconds,
          dlq_oldest_age: s.dlq_oldest_age_seconds,
          parked_keys: s.parked_keys,
          commit_stalled_seconds: s.commit_stalled_seconds,
          expired_unprocessed: expiredTotal,
          dlq_expired: dlqExpired.get(queue) ?? 0,
          drift: drift.get(queue)?.length ?? 0,
        },
        totals,
      );
      for (const consumer of queueConfig.consumers) {
        const namespace = consumerNamespace(queue, consumer.name);
        const { stats: c, totals: consumerTotals } = await services.stats.sweepConsumerLook(namespace);
        read(
          namespace,
          { in_flight: c.in_flight, delayed: c.delayed, dlq_depth: c.dlq_depth },
          {
            dlq_oldest_age: c.dlq_oldest_age_seconds,
            parked_keys: c.parked_keys,
            commit_stalled_seconds: c.commit_stalled_seconds,
            expired_unprocessed: expired.get(namespace) ?? 0,
            dlq_expired: dlqExpired.get(namespace) ?? 0,
          },
          consumerTotals,
        );
      }
    }
    await this.evaluate(readings);
    return produced;
  }

  /** What a namespace's alarm counts grew by since the pass before (none on the first). */
  private countsSince(namespace: string, totals: Record<string, number>): Pick<AlarmReading, 'counts'> {
    const now = Date.now();
    const before = this.previous.get(namespace);
    this.previous.set(namespace, { at: now, totals });
    if (!before) return {};
    const counts: NonNullable<AlarmReading['counts']> = { seconds: (now - before.at) / 1000 };
    for (const name of ALARM_COUNTS)
      counts[name] = Math.max(0, (totals[name] ?? 0) - (before.totals[name] ?? 0));
    return { counts };
  }

  /**
   * The alarms' changes since the last pass: each told to the topic first, then the state written
   * (conditionally: a sweep that lost the race leaves its twin's), so a change is never unheard.
   */
  private async evaluate(readings: ReadonlyMap<string, AlarmReading>): Promise<void> {
    const stored = await this.deps.alarmStates.get();
    const { state, changes } = evaluateAlarms(this.alarms, readings, stored.alarms, Date.now());
    for (const change of changes) await this.deps.notify(change);
    if (!sameAlarmState(stored.alarms, state)) await this.deps.alarmStates.put(stored, state);
  }

  /**
   * The queue's next sample after the latest (`sampled`, its stored item), and its hour's rollup
   * when it is the first of its hour: kept first, so a sample is never recorded without it.
   */
  private async sample(
    queue: string,
    sampled: Record<string, unknown> | undefined,
    reading: UsageReading,
  ): Promise<void> {
    const { samples } = this.deps.services;
    const latest = sampled ? usageSampleOf(sampled) : undefined;
    const next = nextUsageSample(latest, reading);
    if (!latest || hourOf(latest.at) !== hourOf(next.at)) await this.deps.rollups.put(queue, next, !latest);
    await samples.record(queue, next, latest?.at);
  }
}
