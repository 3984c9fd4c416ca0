import type { Context } from 'aws-lambda';
import * as z from 'zod/mini';
import { createAwsFanOutSwitch } from '../aws/fan-out-mappings.js';
import { ENV } from '../core/runtime-config.js';
import { answerStackEvent, type StackEvent } from './app.js';

/** The busy-time fan-out release on AWS, invoked by CloudFormation for the stack's `BusyFanOut` resource. */
const env = z
  .object({
    [ENV.region]: z.string().check(z.minLength(1)),
    [ENV.dispatchFunction]: z.string().check(z.minLength(1)),
  })
  .parse(process.env);
const fanOut = createAwsFanOutSwitch(env[ENV.region], env[ENV.dispatchFunction]);

export const handler = (event: StackEvent, context: Context) => {
  // Within the invocation, with room to answer.
  const deadline = Date.now() + context.getRemainingTimeInMillis() - 5000;
  return answerStackEvent(event, async (stream) => {
    if (!(await fanOut.release(stream, deadline)))
      throw new Error(`the consumer of ${stream} is still being deleted`);
  });
};
