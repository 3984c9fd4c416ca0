import { Logger } from '@aws-lambda-powertools/logger';
import middy from '@middy/core';
import httpRouterHandler from '@middy/http-router';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import type { AwsClients } from '../aws/clients.js';
import { ClaimStore } from '../claims/claims.js';
import { KeyRing } from '../core/auth.js';
import type { RuntimeConfig } from '../core/runtime-config.js';
import { StreamLog } from '../log/stream.js';
import { Producer } from '../produce/producer.js';
import { DedupStore } from '../store/dedup.js';
import { errorResponse, type HttpResponse } from './http.js';
import type { ApiServices, Route } from './route.js';
import { healthRoute } from './routes/health.js';
import { produceRoute } from './routes/produce.js';

export const routes: Route[] = [healthRoute, produceRoute];

export type ApiHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<HttpResponse>;

/** Wires the api function: the same on AWS (handler.ts) and in the local runtime. */
export function createApiHandler(
  config: RuntimeConfig,
  clients: AwsClients,
  logger = new Logger({ serviceName: 'leaseq-api' }),
): ApiHandler {
  const services: ApiServices = {
    config,
    logger,
    keys: new KeyRing([...config.tenant.api_keys, ...(config.extraKeys ?? [])]),
    producer: new Producer({
      tenant: config.tenant.tenant,
      dedup: new DedupStore(clients.doc, config.tableName),
      claims: new ClaimStore(clients.s3, config.bucketName),
      log: new StreamLog(clients.kinesis),
    }),
  };
  const router = httpRouterHandler(
    routes.map((r) => ({
      method: r.method,
      path: r.path,
      handler: (event: APIGatewayProxyEventV2) => r.handler(event, services),
    })),
  );
  return middy<APIGatewayProxyEventV2, HttpResponse>()
    .use({
      onError: async (request) => {
        const { response, internal } = errorResponse(request.error);
        if (internal) logger.error('unhandled error', request.error as Error);
        request.response = response;
      },
    })
    .handler(router as unknown as (event: APIGatewayProxyEventV2, context: Context) => Promise<HttpResponse>);
}
