import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import httpRouterHandler from '@middy/http-router';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { Authenticator } from '../access/authenticator.js';
import { KeyAdmin } from '../access/key-admin.js';
import { RateQuotas } from '../access/quotas.js';
import type { AwsClients } from '../aws/clients.js';
import { bundledConsoleAssets, type ConsoleAssetSource } from '../console/assets.js';
import { consoleRoutes } from '../console/routes.js';
import { KeyRing } from '../core/auth.js';
import type { RuntimeConfig } from '../core/runtime-config.js';
import { PullDelivery } from '../delivery/pull-delivery.js';
import { WaitPlaces } from '../delivery/wait-places.js';
import { countFor, flushMetrics, metricsOptions, SERVICE } from '../observability/metrics.js';
import { Alarms } from '../operations/alarms.js';
import { DeadLetterErrors } from '../operations/dead-letter-errors.js';
import { Usage } from '../operations/usage.js';
import { Producer } from '../produce/producer.js';
import { buildServices, buildSqsAccess } from '../services.js';
import { sqsRoute } from '../sqs/route.js';
import { AlarmStates } from '../store/alarm-states.js';
import { RateWindows } from '../store/rate-windows.js';
import { WaitingPolls } from '../store/waiting-polls.js';
import { type ChannelEvent, type ChannelResult, createChannelHandler } from './channel.js';
import { errorResponse, type HttpResponse, json } from './http.js';
import type { ApiServices, Route } from './route.js';
import { alarmsRoute } from './routes/alarms.js';
import { ackRoute, cancelReceiveRoute, extendRoute, nackRoute, receiveRoute } from './routes/consume.js';
import { healthRoute } from './routes/health.js';
import { createKeyRoute, createSqsCredentialsRoute, listKeysRoute, revokeKeyRoute } from './routes/keys.js';
import {
  auditRoute,
  dlqErrorsRoute,
  dlqGetRoute,
  dlqListRoute,
  dlqPurgeRoute,
  parkedKeysRoute,
  pauseRoute,
  redriveCancelRoute,
  redriveGetRoute,
  redriveMatchingRoute,
  redriveRoute,
  replayCancelRoute,
  replayGetRoute,
  replayRoute,
  resumeRoute,
  retentionCancelRoute,
  retentionGetRoute,
  retentionRoute,
  skipKeyRoute,
  statsRoute,
  traceRoute,
} from './routes/operations.js';
import { produceRoute } from './routes/produce.js';
import { listQueuesRoute } from './routes/queues.js';
import { usageRoute } from './routes/usage.js';

/**
 * The contract of these routes (api/openapi.ts), made once per instance when first asked. Its
 * generator, with zod's JSON Schema code, is a file of its own beside the Lambda bundle, loaded
 * then (infra/leaseq-function.ts): ~28 KB and ~5 ms of every cold start's init otherwise.
 */
let contract: Promise<Record<string, unknown>> | undefined;
const openApiRoute: Route = {
  method: 'GET',
  path: '/openapi.json',
  handler: async () => {
    contract ??= import('./openapi.js').then((module) => module.openApiDocument(routes));
    return json(200, await contract);
  },
};

export const routes: Route[] = [
  healthRoute,
  openApiRoute,
  listQueuesRoute,
  produceRoute,
  receiveRoute,
  cancelReceiveRoute,
  ackRoute,
  nackRoute,
  extendRoute,
  dlqErrorsRoute,
  dlqListRoute,
  dlqGetRoute,
  dlqPurgeRoute,
  redriveRoute,
  redriveMatchingRoute,
  redriveGetRoute,
  redriveCancelRoute,
  replayRoute,
  replayGetRoute,
  replayCancelRoute,
  retentionRoute,
  retentionGetRoute,
  retentionCancelRoute,
  parkedKeysRoute,
  skipKeyRoute,
  pauseRoute,
  resumeRoute,
  auditRoute,
  traceRoute,
  statsRoute,
  createKeyRoute,
  listKeysRoute,
  revokeKeyRoute,
  createSqsCredentialsRoute,
  usageRoute,
  alarmsRoute,
];

export type ApiHandler = ((event: APIGatewayProxyEventV2, context: Context) => Promise<HttpResponse>) & {
  /** The wake channel's WebSocket routes (api/channel.ts), served by the same function. */
  channel: (event: ChannelEvent) => Promise<ChannelResult>;
};

/**
 * Wires the api function: the same on AWS (handler.ts) and in the local runtime, which builds the
 * console's assets itself (`consoleAssets`) where AWS's bundle carries them.
 */
export function createApiHandler(
  config: RuntimeConfig,
  clients: AwsClients,
  logger = new Logger({ serviceName: SERVICE.api }),
  metrics = new Metrics(metricsOptions(SERVICE.api, config.tenant.tenant)),
  consoleAssets: ConsoleAssetSource = bundledConsoleAssets,
): ApiHandler {
  const built = buildServices(config, clients);
  const sqsAccess = buildSqsAccess(config, clients);
  const { apiKeys } = sqsAccess;
  const services: ApiServices = {
    config,
    logger,
    metrics,
    auth: new Authenticator(new KeyRing([...config.tenant.api_keys, ...(config.extraKeys ?? [])]), apiKeys),
    keyAdmin: new KeyAdmin(apiKeys, sqsAccess.sqsCredentials),
    sqsAuth: sqsAccess.sqsAuth,
    quotas: new RateQuotas(new RateWindows(clients.doc, config.tableName)),
    producer: new Producer(built),
    consumer: new PullDelivery({
      ...built,
      places: new WaitPlaces(new WaitingPolls(clients.doc, config.tableName)),
      ranges: built.receiver,
    }),
    deadLetters: built.deadLetters,
    deadLetterErrors: new DeadLetterErrors(built),
    parkedKeys: built.parkedKeys,
    stats: built.stats,
    queueAdmin: built.queueAdmin,
    redrives: built.redrives,
    replays: built.replays,
    retentions: built.retentions,
    trace: built.trace,
    usage: new Usage({ doc: clients.doc, table: config.tableName, samples: built.samples }),
    alarms: new Alarms({ tenant: config.tenant, states: new AlarmStates(clients.doc, config.tableName) }),
    counters: built.counters,
  };
  // The SQS endpoint (POST /) and the console's files beside this API's routes; they answer in
  // their own shapes.
  const router = httpRouterHandler(
    [...routes, sqsRoute, ...consoleRoutes(consoleAssets)].map((r) => ({
      method: r.method,
      path: r.path,
      handler: (event: APIGatewayProxyEventV2) => r.handler(event, services),
    })),
  );
  const http = middy<APIGatewayProxyEventV2, HttpResponse>()
    .use(flushMetrics(metrics))
    .use({
      // A change may leave state for the sweep (a lease, a retry, a job): it arms the sweep
      // (core/sweep-rest.ts). A read never does.
      after: async (request) => {
        if (
          request.event.requestContext.http.method === 'GET' ||
          (request.response?.statusCode ?? 500) >= 400
        )
          return;
        await built.sweepArm.armOrWarn(logger);
      },
    })
    .use({
      onError: async (request) => {
        const { response, internal, code } = errorResponse(request.error);
        if (internal) logger.error('unhandled error', request.error as Error);
        const queue = request.event.pathParameters?.queue;
        if (queue && code === 'STALE_RECEIPT') countFor(metrics, queue, { stale_receipts: 1 });
        if (queue && code === 'UNAVAILABLE') countFor(metrics, queue, { unavailable: 1 });
        request.response = response;
      },
    })
    .handler(router as unknown as (event: APIGatewayProxyEventV2, context: Context) => Promise<HttpResponse>);
  return Object.assign(http, { channel: createChannelHandler(services.auth) });
}
