import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import type { AwsClients } from '../aws/clients.js';
import { sleep } from '../core/async.js';
import { consumerNamespace } from '../core/config.js';
import type { RuntimeConfig } from '../core/runtime-config.js';
import { metricsOptions, publishGauges, SERVICE } from '../observability/metrics.js';
import { buildServices } from '../services.js';
import { ExpiryMarks } from '../store/expiry-marks.js';
import { BlockedKeys } from './blocked-keys.js';
import { ExpiryWatch } from './expiry-watch.js';
import { HeldSweep } from './held-sweep.js';
import { Sweeper, type SweepReport } from './sweeper.js';

export type SweepHandler = ((event: unknown, context: Context) => Promise<SweepReport>) & {
  /** Resolves once the gauges being published (if any) are. */
  published(): Promise<void>;
};

export interface SweepOptions {
  /** Gauges are computed at most this often (COUNT queries over the index partitions). */
  gaugeIntervalMs?: number;
  /** Pause between passes inside one invocation. */
  passIntervalMs?: number;
  /** Stop starting passes when less than this is left of the invocation. */
  reserveMs?: number;
  /**
   * Whether an invocation ends with its gauges published (default, as on AWS), or leaves them to
   * finish beside the next invocations: the local runtime's invocations are one pass each.
   */
  awaitGauges?: boolean;
}

/**
 * Wires the sweep function. EventBridge fires it once a minute; it keeps making passes until
 * the invocation is nearly over, so a 10 s backoff tier is late by a pass interval at most.
 */
export function createSweepHandler(
  config: RuntimeConfig,
  clients: AwsClients,
  options: SweepOptions = {},
  logger = new Logger({ serviceName: SERVICE.sweep }),
  metrics = new Metrics(metricsOptions(SERVICE.sweep, config.tenant.tenant)),
): SweepHandler {
  const services = buildServices(config, clients);
  // Only the sweep watches for expiries: built here, not in every function's services.
  const expiryWatch = new ExpiryWatch({ ...services, marks: new ExpiryMarks(clients.doc, config.tableName) });
  const sweeper = new Sweeper({
    ...services,
    blockedKeys: new BlockedKeys(services),
    heldSweep: new HeldSweep(services),
    tenant: config.tenant,
    logger,
  });
  const gaugeInterval = options.gaugeIntervalMs ?? 60_000;
  let gaugesAt = 0;
  const publishAllGauges = async () => {
    if (Date.now() - gaugesAt < gaugeInterval) return;
    gaugesAt = Date.now();
    for (const [queue, queueConfig] of Object.entries(config.tenant.queues)) {
      // Dead letters whose retention ended free their bytes (DynamoDB's TTL deletes them unseen).
      for (const namespace of [queue, ...queueConfig.consumers.map((c) => consumerNamespace(queue, c.name))])
        await services.storage.expireDeadLetters(namespace, Date.now());
      // Counted into the totals first, published as this interval's new ones (the alarm clears after).
      const expired = await expiryWatch.check(queue, queueConfig);
      const expiredTotal = [...expired.values()].reduce((a, n) => a + n, 0);
      const s = await services.operations.stats(queue, queueConfig, { keepMarks: true });
      // The stats' drain rates come from these, a gauge interval apart (none for an unused queue).
      if (s.produced_total || s.acked_total)
        await services.samples.record(queue, {
          at: Date.now(),
          produced: s.produced_total,
          acked: s.acked_total,
        });
      publishGauges(metrics, queue, {
        depth: s.depth,
        in_flight: s.in_flight,
        delayed: s.delayed,
        dlq_depth: s.dlq_depth,
        oldest_unacked_age: s.oldest_unacked_age_seconds,
        dlq_oldest_age: s.dlq_oldest_age_seconds,
        parked_keys: s.parked_keys,
        commit_stalled_seconds: s.commit_stalled_seconds,
        expired_unprocessed: expiredTotal,
      });
      for (const consumer of queueConfig.consumers) {
        const namespace = consumerNamespace(queue, consumer.name);
        const c = await services.operations.consumerStats(namespace, { keepMarks: true });
        publishGauges(metrics, namespace, {
          in_flight: c.in_flight,
          delayed: c.delayed,
          dlq_depth: c.dlq_depth,
          dlq_oldest_age: c.dlq_oldest_age_seconds,
          parked_keys: c.parked_keys,
          commit_stalled_seconds: c.commit_stalled_seconds,
          expired_unprocessed: expired.get(namespace) ?? 0,
        });
      }
    }
  };
  // The gauges read every queue's stats: published beside the passes, never before one, so a
  // retry that comes due meanwhile is not held up by them.
  let publishing: Promise<void> | undefined;
  const gauges = () => {
    publishing ??= publishAllGauges()
      .catch((err) => logger.warn('gauges failed', { error: String(err) }))
      .finally(() => {
        publishing = undefined;
      });
    return publishing;
  };
  const interval = options.passIntervalMs ?? 1000;
  const reserve = options.reserveMs ?? 5000;
  const handler = async (_event: unknown, context: Context): Promise<SweepReport> => {
    const total: SweepReport = { requeued: 0, expired: 0, released: 0, redriven: 0, replayed: 0 };
    const published = gauges();
    do {
      const pass = await sweeper.sweepOnce();
      await services.counters.flush();
      total.requeued += pass.requeued;
      total.expired += pass.expired;
      total.released += pass.released;
      total.redriven += pass.redriven;
      total.replayed += pass.replayed;
      if (context.getRemainingTimeInMillis() < reserve + interval) break;
      await sleep(interval);
    } while (context.getRemainingTimeInMillis() > reserve);
    if (options.awaitGauges !== false) await published;
    return total;
  };
  return Object.assign(handler, { published: async () => publishing });
}
