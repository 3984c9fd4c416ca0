import { Logger } from '@aws-lambda-powertools/logger';
import type { KinesisStreamBatchResponse, KinesisStreamEvent } from 'aws-lambda';
import type { AwsClients } from '../aws/clients.js';
import type { RuntimeConfig } from '../core/runtime-config.js';
import { Counters } from '../store/counters.js';
import { MessageStore } from '../store/messages.js';
import { Dispatcher } from './dispatcher.js';

export type DispatchHandler = (event: KinesisStreamEvent) => Promise<KinesisStreamBatchResponse>;

/** Wires the dispatch function: the same on AWS (handler.ts) and in the local runtime. */
export function createDispatchHandler(
  config: RuntimeConfig,
  clients: AwsClients,
  logger = new Logger({ serviceName: 'leaseq-dispatch' }),
): DispatchHandler {
  const dispatcher = new Dispatcher({
    tenant: config.tenant,
    messages: new MessageStore(clients.doc, config.tableName),
    counters: new Counters(clients.doc, config.tableName),
    logger,
  });
  return (event) => dispatcher.handle(event);
}
