import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import httpRouterHandler from '@middy/http-router';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import type { AwsClients } from '../aws/clients.js';
import { ClaimStore } from '../claims/claims.js';
import { Consumer } from '../consume/consumer.js';
import { Operations } from '../consume/operations.js';
import { KeyRing } from '../core/auth.js';
import { ReceiptSigner } from '../core/receipt.js';
import type { RuntimeConfig } from '../core/runtime-config.js';
import { ShardDirectory, StreamLog } from '../log/stream.js';
import { countFor, METRICS_NAMESPACE } from '../observability/metrics.js';
import { Producer } from '../produce/producer.js';
import { Counters } from '../store/counters.js';
import { DedupStore } from '../store/dedup.js';
import { MessageStore } from '../store/messages.js';
import { loadReceiptSecret } from '../store/secret.js';
import { errorResponse, type HttpResponse } from './http.js';
import type { ApiServices, Route } from './route.js';
import { ackRoute, extendRoute, nackRoute, receiveRoute } from './routes/consume.js';
import { healthRoute } from './routes/health.js';
import { dlqGetRoute, dlqListRoute, statsRoute } from './routes/operations.js';
import { produceRoute } from './routes/produce.js';

export const routes: Route[] = [
  healthRoute,
  produceRoute,
  receiveRoute,
  ackRoute,
  nackRoute,
  extendRoute,
  dlqListRoute,
  dlqGetRoute,
  statsRoute,
];

export type ApiHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<HttpResponse>;

/** Wires the api function: the same on AWS (handler.ts) and in the local runtime. */
export function createApiHandler(
  config: RuntimeConfig,
  clients: AwsClients,
  logger = new Logger({ serviceName: 'leaseq-api' }),
  metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: 'leaseq-api' }),
): ApiHandler {
  const tenant = config.tenant.tenant;
  const messages = new MessageStore(clients.doc, config.tableName);
  const counters = new Counters(clients.doc, config.tableName);
  const claims = new ClaimStore(clients.s3, config.bucketName);
  const shards = new ShardDirectory(clients.kinesis);
  let signer: Promise<ReceiptSigner> | undefined;
  const loadSigner = () => {
    signer ??= loadReceiptSecret(clients.doc, config.tableName).then((secret) => new ReceiptSigner(secret));
    signer.catch(() => {
      signer = undefined;
    });
    return signer;
  };
  const services: ApiServices = {
    config,
    logger,
    metrics,
    keys: new KeyRing([...config.tenant.api_keys, ...(config.extraKeys ?? [])]),
    producer: new Producer({
      tenant,
      dedup: new DedupStore(clients.doc, config.tableName),
      claims,
      counters,
      log: new StreamLog(clients.kinesis),
    }),
    consumer: new Consumer({ tenant, messages, counters, claims, shards, signer: loadSigner }),
    operations: new Operations({ tenant, messages, counters, claims, shards }),
  };
  const router = httpRouterHandler(
    routes.map((r) => ({
      method: r.method,
      path: r.path,
      handler: (event: APIGatewayProxyEventV2) => r.handler(event, services),
    })),
  );
  return middy<APIGatewayProxyEventV2, HttpResponse>()
    .use(logMetrics(metrics))
    .use({
      onError: async (request) => {
        const { response, internal, code } = errorResponse(request.error);
        if (internal) logger.error('unhandled error', request.error as Error);
        const queue = request.event.pathParameters?.queue;
        if (queue && code === 'STALE_RECEIPT') countFor(metrics, queue, { stale_receipts: 1 });
        if (queue && (code === 'UNAVAILABLE' || code === 'QUOTA_EXCEEDED'))
          countFor(metrics, queue, { throttled: 1 });
        request.response = response;
      },
    })
    .handler(router as unknown as (event: APIGatewayProxyEventV2, context: Context) => Promise<HttpResponse>);
}
