import { Logger } from '@aws-lambda-powertools/logger';
import { createSweepHandler } from '../../functions/sweep/app.js';
import type { TestRuntime } from './runtime.js';

/** The sweep's Logger, keeping the gauge lines it writes (sweep/app.ts) instead of printing them. */
class GaugeLines extends Logger {
  readonly lines: Record<string, unknown>[] = [];
  override info(message: unknown, ...rest: unknown[]): void {
    if (message === 'gauges') this.lines.push(Object.assign({}, ...(rest as object[])));
    else super.info(message as string, ...(rest as []));
  }
}

/** A sweep of the runtime's tenant that records its gauges at every invocation, into `lines`. */
export function gaugedSweep(t: TestRuntime) {
  const logger = new GaugeLines({ logLevel: 'SILENT' });
  const sweep = createSweepHandler(
    t.runtime.config,
    t.runtime.clients,
    { gaugeIntervalMs: 0, passIntervalMs: 0, reserveMs: 0 },
    logger,
  );
  return { lines: logger.lines, sweep };
}
