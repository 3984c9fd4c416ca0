import { createClients } from '../aws/clients.js';
import { runtimeConfigFromEnv } from '../core/runtime-config.js';
import { createSweepHandler } from './app.js';

/** The sweep Lambda on AWS, fired every minute by EventBridge. */
const config = runtimeConfigFromEnv(process.env);
export const handler = createSweepHandler(
  config,
  createClients({ region: config.region, channelEndpoint: config.channelEndpoint }),
);
