import { Logger } from '@aws-lambda-powertools/logger';
import type { MeterSnapshot } from '../functions/aws/meter.js';
import { buildServices } from '../functions/services.js';
import { ExpiryMarks } from '../functions/store/expiry-marks.js';
import { createGauges } from '../functions/sweep/app.js';
import { ExpiryWatch } from '../functions/sweep/expiry-watch.js';
import type { Runtime } from '../infra/local/runtime.js';

/** What an idle tenant's sweep does at each minute's tick, measured once. */
export interface IdleTick {
  meter: MeterSnapshot;
  ms: number;
  queues: number;
  /** Whether the pass rested, as a tick with nothing to do must. */
  rested: boolean;
}

/**
 * One tick of an idle tenant's sweep (core/sweep-rest.ts): a pass that finds nothing and rests,
 * then the gauges, which the sweep computes about once a minute. Measured on a runtime nothing
 * has armed since it started.
 */
export async function measureIdleTick(runtime: Runtime): Promise<IdleTick> {
  const { meter } = runtime.clients;
  const services = buildServices(runtime.config, runtime.clients);
  const gauges = createGauges(runtime.config, runtime.clients, services, {
    expiryWatch: new ExpiryWatch({
      ...services,
      marks: new ExpiryMarks(runtime.clients.doc, runtime.config.tableName),
    }),
    logger: new Logger({ logLevel: 'SILENT' }),
  });
  meter.reset();
  const start = performance.now();
  await runtime.sweep.fire();
  await gauges.publish();
  return {
    meter: meter.snapshot(),
    ms: performance.now() - start,
    queues: Object.keys(runtime.config.tenant.queues).length,
    rested: runtime.sweep.resting,
  };
}
