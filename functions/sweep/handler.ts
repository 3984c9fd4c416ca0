import type { Context } from 'aws-lambda';
import { createClients, createRequestHandler } from '../aws/clients.js';
import { EventSourceMappingsClient } from '../aws/event-source-mappings.js';
import { AwsFanOutSwitch } from '../aws/fan-out-mappings.js';
import { runtimeConfigFromEnv } from '../core/runtime-config.js';
import { createSweepHandler } from './app.js';
import { answerStackEvent, isStackEvent } from './stack-events.js';

/**
 * The sweep Lambda on AWS, fired every minute by EventBridge, and by CloudFormation for the
 * stack's busy-time fan-out resource (stack-events.ts).
 */
const config = runtimeConfigFromEnv(process.env);
const clients = createClients({ region: config.region, channelEndpoint: config.channelEndpoint });
const fanOut =
  config.dispatchFunction === undefined
    ? undefined
    : new AwsFanOutSwitch({
        kinesis: clients.kinesis,
        mappings: new EventSourceMappingsClient({
          region: config.region,
          requestHandler: createRequestHandler(),
        }),
        dispatchFunction: config.dispatchFunction,
      });
const sweep = createSweepHandler(config, clients, fanOut ? { fanOut } : {});

export const handler = async (event: unknown, context: Context) => {
  if (!isStackEvent(event)) return sweep(event, context);
  // Within the invocation, with room to answer.
  const deadline = Date.now() + context.getRemainingTimeInMillis() - 5000;
  return answerStackEvent(event, async (stream) => {
    if (fanOut && !(await fanOut.release(stream, deadline)))
      throw new Error(`the consumer of ${stream} is still being deleted`);
  });
};
