import type { Context } from 'aws-lambda';
import { lambdaContext } from './lambda-context.js';

/**
 * Plays EventBridge's schedule for a scheduled function. Locally the function makes one pass
 * per firing (its invocation is given no time for more), and the timer fires every
 * `intervalMs`: the same cadence the function keeps inside one long invocation on AWS.
 */

export interface Schedule {
  /** Fires now (tests use it to drive the sweep without waiting). */
  fire(): Promise<void>;
  stop(): Promise<void>;
}

export function startSchedule(
  name: string,
  handler: (event: unknown, context: Context) => Promise<unknown>,
  intervalMs: number,
  onError: (err: unknown) => void,
): Schedule {
  let running: Promise<void> | undefined;
  let stopped = false;
  const fire = () => {
    // One invocation at a time, as the stack's reserved concurrency of 1 does on AWS.
    running ??= handler({ source: 'aws.events', 'detail-type': 'Scheduled Event' }, lambdaContext(name, 0))
      .then(() => undefined, onError)
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const timer = setInterval(() => {
    if (!stopped) void fire();
  }, intervalMs);
  return {
    fire,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
