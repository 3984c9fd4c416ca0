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
  const dispatcher = new Dispatcher({ ...buildServices(config, clients), tenant: config.tenant, logger });
  return (event) => dispatcher.handle(event);
}
