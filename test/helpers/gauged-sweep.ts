import { Logger } from '@aws-lambda-powertools/logger';
import { metricsOptions, SERVICE } from '../../functions/observability/metrics.js';
import { createSweepHandler } from '../../functions/sweep/app.js';
import { CapturedMetrics } from './captured-metrics.js';
import type { TestRuntime } from './runtime.js';

/** A sweep of the runtime's tenant that publishes its gauges at every invocation, into `metrics`. */
export function gaugedSweep(t: TestRuntime) {
  const metrics = new CapturedMetrics(metricsOptions(SERVICE.sweep, t.runtime.config.tenant.tenant));
  const sweep = createSweepHandler(
    t.runtime.config,
    t.runtime.clients,
    { gaugeIntervalMs: 0, passIntervalMs: 0, reserveMs: 0 },
    new Logger({ logLevel: 'SILENT' }),
    metrics,
  );
  return { metrics, sweep };
}
