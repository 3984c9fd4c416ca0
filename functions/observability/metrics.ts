import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MetricsOptions } from '@aws-lambda-powertools/metrics/types';

/**
 * Queue metrics (named as in docs/contract.md, "Observability"), emitted in CloudWatch embedded metric format by
 * Powertools. Counters come from the requests that caused them. The sweep's gauges are log lines
 * (sweep/gauges.ts): no alarm in CloudWatch reads them.
 */

export const METRICS_NAMESPACE = 'leaseq';

/**
 * The functions' service names: Powertools puts them in every log line and, as the `service`
 * dimension, in every metric, so the stack's alarms must name them exactly.
 */
export const SERVICE = {
  api: 'leaseq-api',
  dispatch: 'leaseq-dispatch',
  sweep: 'leaseq-sweep',
  consumer: 'leaseq-consumer',
} as const;

/**
 * How a function's Metrics are made. Every metric carries its tenant: stacks of several tenants
 * share an account's metrics, and two of them may name a queue alike.
 */
export function metricsOptions(service: string, tenant: string): MetricsOptions {
  return { namespace: METRICS_NAMESPACE, serviceName: service, defaultDimensions: { tenant } };
}

export type CounterName =
  | 'produced'
  | 'duplicate'
  | 'received'
  | 'redelivered'
  | 'acked'
  | 'nacked'
  | 'stale_receipts'
  | 'dead_lettered'
  /** Requests refused over a quota (429 QUOTA_EXCEEDED). */
  | 'throttled'
  /** Requests answered 503: AWS refused or failed a call after its retries. */
  | 'unavailable';

/**
 * Gauges the queues' alarms read (observability/queue-alarms.ts). Like every gauge, the sweep
 * writes them in a log line, not as CloudWatch metrics (sweep/gauges.ts).
 */
export type AlarmedGauge =
  | 'oldest_unacked_age'
  | 'dlq_oldest_age'
  | 'parked_keys'
  | 'expired_unprocessed'
  /** Dead letters whose DLQ retention ended unhandled, counted that minute. */
  | 'dlq_expired'
  /** Durability settings of the queue's stream or the table found below what the stack set (core/drift.ts). */
  | 'drift'
  /** The longest a shard's commit point has not moved with something unfinished (core/commit-stall.ts). */
  | 'commit_stalled_seconds';

/** Gauges no alarm reads: in the sweep's gauge line beside the others, and in stats. */
export type ShownGauge = 'depth' | 'in_flight' | 'delayed' | 'dlq_depth';

export type GaugeName = AlarmedGauge | ShownGauge;

/** Timings kept value by value, so CloudWatch can take percentiles of them. */
export type DurationName = 'handler_seconds';

/** The dimensions each Metrics' stored metrics are for: one EMF document holds one set's. */
const storedFor = new WeakMap<Metrics, string>();

/**
 * Publishes what was stored under other dimensions, then stores under `dimensions` (and under the
 * tenant's own set as well, with `andTenant`).
 */
function forDimensions(metrics: Metrics, dimensions: Record<string, string>, andTenant = false): void {
  const label = JSON.stringify(dimensions) + (andTenant ? '+tenant' : '');
  const current = storedFor.get(metrics);
  if (current === label) return;
  if (current !== undefined) {
    if (metrics.hasStoredMetrics()) publish(metrics);
    else metrics.clearDimensions();
  }
  for (const [name, value] of Object.entries(dimensions)) metrics.addDimension(name, value);
  if (andTenant) metrics.addDimensions({});
  storedFor.set(metrics, label);
}

function forQueue(metrics: Metrics, queue: string): void {
  forDimensions(metrics, { queue });
}

function publish(metrics: Metrics): void {
  metrics.publishStoredMetrics();
  storedFor.delete(metrics);
}

export function countFor(
  metrics: Metrics,
  queue: string,
  counts: Partial<Record<CounterName, number>>,
): void {
  const entries = Object.entries(counts).filter(([, n]) => n);
  if (!entries.length) return;
  forQueue(metrics, queue);
  for (const [name, n] of entries) metrics.addMetric(name, MetricUnit.Count, n as number);
}

/**
 * A produce's counts for its queue. `produced` goes in the same EMF document under a second
 * dimension set without the queue, which the tenant's produce-rate-anomaly alarm reads
 * (infra/alarms.ts): one line a request, where a document of its own would be a second.
 * Duplicates are counted for the queue alone, so the tenant set carries no metric nobody reads.
 */
export function countProduced(metrics: Metrics, queue: string, produced: number, duplicate: number): void {
  if (produced) {
    forDimensions(metrics, { queue }, true);
    metrics.addMetric('produced' satisfies CounterName, MetricUnit.Count, produced);
  }
  countFor(metrics, queue, { duplicate });
}

/**
 * A request refused over a quota (429): counted for the queue (the quota-throttled alarm) and
 * for the queue and the API key that was refused, so an operator sees whose traffic hit the limit.
 */
export function countThrottled(metrics: Metrics, queue: string, apiKey: string): void {
  countFor(metrics, queue, { throttled: 1 });
  forDimensions(metrics, { queue, api_key: apiKey });
  metrics.addMetric('throttled', MetricUnit.Count, 1);
}

/**
 * Durations of one queue: each value stays in the EMF document (Powertools publishes at 100 a
 * name), so an alarm can watch their p99.
 */
export function recordDurations(
  metrics: Metrics,
  queue: string,
  name: DurationName,
  seconds: readonly number[],
): void {
  if (!seconds.length) return;
  forQueue(metrics, queue);
  for (const value of seconds) metrics.addMetric(name, MetricUnit.Seconds, value);
}

/**
 * Publishes what a request counted, after it and after its error. Powertools' own logMetrics
 * warns on every request that counted nothing (health checks, rejected requests).
 */
export function flushMetrics(metrics: Metrics) {
  const flush = async () => {
    if (metrics.hasStoredMetrics()) publish(metrics);
  };
  return { after: flush, onError: flush };
}
