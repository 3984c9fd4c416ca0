import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { createClients } from '../aws/clients.js';
import { runtimeConfigFromEnv } from '../core/runtime-config.js';
import { createApiHandler } from './app.js';
import { type ChannelEvent, isChannelEvent } from './channel.js';

/**
 * The api Lambda on AWS: configuration from the stack's environment, clients created once. The
 * HTTP API's requests and the wake channel's WebSocket events reach the same function.
 */
const config = runtimeConfigFromEnv(process.env);
const api = createApiHandler(
  config,
  createClients({ region: config.region, channelEndpoint: config.channelEndpoint }),
);
export const handler = (event: APIGatewayProxyEventV2 | ChannelEvent, context: Context) =>
  isChannelEvent(event) ? api.channel(event) : api(event, context);
