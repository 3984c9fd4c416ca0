import { createClients } from '../aws/clients.js';
import { createAwsFanOutSwitch } from '../aws/fan-out-mappings.js';
import { runtimeConfigFromEnv } from '../core/runtime-config.js';
import { createSweepHandler } from './app.js';

/** The sweep Lambda on AWS, fired every minute by EventBridge. */
const config = runtimeConfigFromEnv(process.env);
export const handler = createSweepHandler(
  config,
  createClients({ region: config.region, channelEndpoint: config.channelEndpoint }),
  // The stack names dispatch to a sweep whose tenant has a stream on busy-time fan-out.
  config.dispatchFunction ? { fanOut: createAwsFanOutSwitch(config.region, config.dispatchFunction) } : {},
);
