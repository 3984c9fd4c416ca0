import type { Logger } from '@aws-lambda-powertools/logger';
import type { AwsClients } from '../../functions/aws/clients.js';
import { streamOf } from '../../functions/core/config.js';
import type { RuntimeConfig } from '../../functions/core/runtime-config.js';
import { bindConsumer } from '../../functions/lambda-consumer/middleware.js';
import { importConsumers } from '../consumer-modules.js';
import type { EventSourceMapping } from './event-source.js';

/**
 * The tenant's Lambda consumers, run in this process: each declared `entry` module is imported
 * and checked (infra/consumer-modules.ts, as synth does) and its handler export is bound to the
 * runtime's config and clients (`bindConsumer`), then fed
 * by an event source mapping with the consumer's batch settings, as the stack does on AWS.
 */

export async function consumerMappings(
  config: RuntimeConfig,
  clients: AwsClients,
  logger: (functionName: string) => Logger,
): Promise<EventSourceMapping[]> {
  return (await importConsumers(config.tenant)).map(({ queue, consumer: c, exported }) => {
    const functionName = `consumer-${queue}-${c.name}`;
    return {
      functionName,
      streamName: streamOf(config.tenant, queue),
      handler: bindConsumer(exported, {
        config,
        clients,
        queue,
        consumer: c.name,
        logger: logger(functionName),
      }),
      batchSize: c.batch_size,
      maximumBatchingWindowMs: c.max_batching_window_seconds * 1000,
      timeoutMs: c.timeout_seconds * 1000,
      fanOut: config.tenant.queues[queue]?.fan_out === 'always',
    };
  });
}
