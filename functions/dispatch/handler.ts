import { createClients } from '../aws/clients.js';
import { runtimeConfigFromEnv } from '../core/runtime-config.js';
import { createDispatchHandler } from './app.js';

/** The dispatch Lambda on AWS, subscribed to every queue stream of the tenant. */
const config = runtimeConfigFromEnv(process.env);
export const handler = createDispatchHandler(
  config,
  createClients({ region: config.region, channelEndpoint: config.channelEndpoint }),
);
