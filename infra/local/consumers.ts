import type { Logger } from '@aws-lambda-powertools/logger';
import type { AwsClients } from '../../functions/aws/clients.js';
import { bindConsumer } from '../../functions/consumer/middleware.js';
import { streamName } from '../../functions/core/config.js';
import type { RuntimeConfig } from '../../functions/core/runtime-config.js';
import type { EventSourceMapping } from './event-source.js';

/**
 * The tenant's Lambda consumers, run in this process: each declared `entry` module is imported
 * and its handler export is bound to the runtime's config and clients (`bindConsumer`), then fed
 * by an event source mapping with the consumer's batch settings, as the stack does on AWS.
 */

/** `entry` is relative to the project root, as for the stack's bundles (infra/leaseq-function.ts). */
const PROJECT_ROOT = new URL('../../', import.meta.url);

export async function consumerMappings(
  config: RuntimeConfig,
  clients: AwsClients,
  logger: (functionName: string) => Logger,
): Promise<EventSourceMapping[]> {
  const mappings: EventSourceMapping[] = [];
  for (const [queue, q] of Object.entries(config.tenant.queues)) {
    for (const c of q.consumers) {
      const functionName = `consumer-${queue}-${c.name}`;
      const where = `consumer ${c.name} of ${queue} (${c.entry})`;
      let module: Record<string, unknown>;
      try {
        module = await import(new URL(c.entry, PROJECT_ROOT).href);
      } catch (err) {
        throw new Error(`${where}: cannot import the module: ${(err as Error).message}`, { cause: err });
      }
      if (!(c.handler in module)) throw new Error(`${where}: the module has no export "${c.handler}"`);
      let handler: EventSourceMapping['handler'];
      try {
        handler = bindConsumer(module[c.handler], {
          config,
          clients,
          queue,
          consumer: c.name,
          logger: logger(functionName),
        });
      } catch (err) {
        throw new Error(`${where}: ${(err as Error).message}`, { cause: err });
      }
      mappings.push({
        functionName,
        streamName: streamName(config.tenant.tenant, queue),
        handler,
        batchSize: c.batch_size,
        maximumBatchingWindowMs: c.max_batching_window_seconds * 1000,
        timeoutMs: c.timeout_seconds * 1000,
      });
    }
  }
  return mappings;
}
