import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import type { Context, KinesisStreamBatchResponse, KinesisStreamEvent } from 'aws-lambda';
import * as z from 'zod/mini';
import { type AwsClients, createClients } from '../aws/clients.js';
import { QUEUE_NAME } from '../core/config.js';
import { ENV, type RuntimeConfig, runtimeConfigFromEnv } from '../core/runtime-config.js';
import { intIn } from '../core/zod-mini.js';
import { flushMetrics, metricsOptions, SERVICE } from '../observability/metrics.js';
import { buildServices } from '../services.js';
import { RangePushConsumer } from './range-push-consumer.js';
import type { MessageHandler } from './records.js';

/**
 * `leaseqConsumer(handler, options)`: the Lambda handler of a push consumer, for the queue's
 * event source mapping. On AWS it builds its config and clients from the environment on the
 * first invocation. The local runtime does not go through the environment: it builds its own
 * instance from the same definition with `bindConsumer`, so two runtimes in one process (tests)
 * never share one binding, and the user's handler (and whatever its module records) is the
 * very function the module exported.
 */

export interface LeaseqConsumerOptions {
  queue: string;
  /** The consumer's name in the tenant file; default LEASEQ_CONSUMER_NAME (the stack sets it). */
  consumer?: string;
  /** Records of a batch handled at once. Default 8. */
  concurrency?: number;
  /** No record is started with less than this left of the invocation. Default 5000. */
  timeoutMarginMs?: number;
  /** Default: from the environment (LEASEQ_TENANT_CONFIG, LEASEQ_TABLE, …, LEASEQ_LOCAL_ENDPOINTS). */
  config?: RuntimeConfig;
  /** Default: SDK clients for `config`'s region and endpoints. */
  clients?: AwsClients;
}

export type ConsumerLambda = (
  event: KinesisStreamEvent,
  context: Context,
) => Promise<KinesisStreamBatchResponse>;

/** Where the local runtime finds the definition; `Symbol.for` so a second copy of this module agrees. */
const DEFINITION = Symbol.for('leaseq.consumer.definition');

export interface Definition {
  // biome-ignore lint/suspicious/noExplicitAny: the payload type is the user's.
  handler: MessageHandler<any>;
  options: LeaseqConsumerOptions & { concurrency: number; timeoutMarginMs: number };
}

const optionsSchema = z.object({
  queue: z.string().check(z.regex(QUEUE_NAME)),
  consumer: z.optional(z.string().check(z.minLength(1))),
  concurrency: z._default(intIn(1, 100), 8),
  timeoutMarginMs: z._default(intIn(0), 5000),
});

export function leaseqConsumer<T = unknown>(
  handler: MessageHandler<T>,
  options: LeaseqConsumerOptions,
): ConsumerLambda {
  const definition: Definition = { handler, options: { ...options, ...optionsSchema.parse(options) } };
  let instance: Promise<ConsumerLambda> | undefined;
  const lambda: ConsumerLambda = async (event, context) => {
    instance ??= Promise.resolve().then(() => {
      const config = options.config ?? runtimeConfigFromEnv(process.env);
      return instantiate(definition, {
        config,
        clients: options.clients ?? createClients({ region: config.region, endpoints: config.endpoints }),
        consumer: process.env[ENV.consumerName],
      });
    });
    return (await instance)(event, context);
  };
  return Object.assign(lambda, { [DEFINITION]: definition });
}

export interface Binding {
  config: RuntimeConfig;
  clients: AwsClients;
  /** The queue and consumer the tenant file declares for this module. */
  queue: string;
  consumer: string;
  logger?: Logger;
  metrics?: Metrics;
}

/** The local runtime's instance of an exported consumer, with its own config and clients. */
export function bindConsumer(exported: unknown, binding: Binding): ConsumerLambda {
  return instantiate(declaredConsumer(exported, binding), binding);
}

/**
 * The definition of an exported consumer, if it is one made by leaseqConsumer() for the queue
 * and consumer the tenant file declares it as; throws what is wrong otherwise. The local runtime
 * and synth both ask, so they refuse the same modules with the same words.
 */
export function declaredConsumer(
  exported: unknown,
  declared: { queue: string; consumer: string },
): Definition {
  const definition =
    typeof exported === 'function' ? (exported as { [DEFINITION]?: Definition })[DEFINITION] : undefined;
  if (!definition) throw new Error('the export is not a handler made by leaseqConsumer()');
  const { queue, consumer = declared.consumer } = definition.options;
  if (queue !== declared.queue || consumer !== declared.consumer) {
    throw new Error(
      `the handler consumes ${queue}/${consumer}, but the tenant file declares it for ${declared.queue}/${declared.consumer}`,
    );
  }
  return definition;
}

function instantiate(
  definition: Definition,
  env: {
    config: RuntimeConfig;
    clients: AwsClients;
    consumer: string | undefined;
    logger?: Logger;
    metrics?: Metrics;
  },
): ConsumerLambda {
  const { queue, concurrency, timeoutMarginMs } = definition.options;
  const consumer = definition.options.consumer ?? env.consumer;
  const where = `leaseqConsumer({ queue: '${queue}' })`;
  if (!consumer) throw new Error(`${where}: name the consumer ({ consumer }) or set ${ENV.consumerName}`);
  const config = env.config.tenant.queues[queue];
  if (!config) throw new Error(`${where}: the tenant has no queue "${queue}"`);
  // The sweep retries the messages of declared consumers only.
  if (!config.consumers.some((c) => c.name === consumer)) {
    throw new Error(
      `${where}: consumer "${consumer}" is not declared on queue "${queue}" in the tenant file`,
    );
  }
  const logger = (env.logger ?? new Logger()).createChild({ persistentKeys: { queue, consumer } });
  const metrics = env.metrics ?? new Metrics(metricsOptions(SERVICE.consumer, env.config.tenant.tenant));
  const services = buildServices(env.config, env.clients);
  // An invocation leaves leases (a crash's) and retries for the sweep (core/sweep-rest.ts).
  const deps = {
    ...services,
    queue,
    consumer,
    config,
    logger,
    metrics,
    handler: definition.handler,
    concurrency,
    timeoutMarginMs,
  };
  const push = new RangePushConsumer(deps);
  return middy<KinesisStreamEvent, KinesisStreamBatchResponse>()
    .use(injectLambdaContext(logger))
    .use(flushMetrics(metrics))
    .handler(async (event, context) => {
      await services.sweepArm.armOrWarn(logger);
      const answer = await push.handle(event, context);
      await services.sweepArm.armOrWarn(logger);
      return answer;
    });
}
