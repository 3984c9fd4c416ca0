import { Logger } from '@aws-lambda-powertools/logger';
import type { KinesisStreamBatchResponse, KinesisStreamEvent } from 'aws-lambda';
import type { AwsClients } from '../aws/clients.js';
import type { RuntimeConfig } from '../core/runtime-config.js';
import { SERVICE } from '../observability/metrics.js';
import { buildServices } from '../services.js';
import { Dispatcher } from './dispatcher.js';

export type DispatchHandler = (event: KinesisStreamEvent) => Promise<KinesisStreamBatchResponse>;

/** Wires the dispatch function: the same on AWS (handler.ts) and in the local runtime. */
export function createDispatchHandler(
  config: RuntimeConfig,
  clients: AwsClients,
  logger = new Logger({ serviceName: SERVICE.dispatch }),
): DispatchHandler {
  const services = buildServices(config, clients);
  const dispatcher = new Dispatcher({ ...services, tenant: config.tenant, logger });
  return async (event) => {
    const answer = await dispatcher.handle(event);
    // Admission may have left delayed messages for the sweep (core/sweep-rest.ts).
    await services.sweepArm.armOrWarn(logger);
    return answer;
  };
}
