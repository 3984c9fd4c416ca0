import { createClients } from '../aws/clients.js';
import { runtimeConfigFromEnv } from '../core/runtime-config.js';
import { createApiHandler } from './app.js';

/** The api Lambda on AWS: configuration from the stack's environment, clients created once. */
const config = runtimeConfigFromEnv(process.env);
export const handler = createApiHandler(config, createClients({ region: config.region }));
