import type { Context } from 'aws-lambda';
import { nextPassIn } from '../../functions/core/sweep-cadence.js';
import { lambdaContext } from './lambda-context.js';

/**
 * Plays EventBridge's schedule for a scheduled function. Locally the function makes one pass
 * per firing (its invocation is given no time for more), and the timer fires `intervalMs` after
 * the last firing began (core/sweep-cadence.ts): the same cadence the function keeps inside one
 * long invocation on AWS. An
 * invocation that answers `rested` (the sweep, core/sweep-rest.ts) is fired again at the next
 * tick, `tickMs` later, unless `wake` calls it first, as the table's stream does on AWS.
 */

export interface Schedule {
  /** Fires now (tests use it to drive the sweep without waiting). */
  fire(): Promise<void>;
  /** Ends a rest: fires now, and at `intervalMs` again. */
  wake(): void;
  /** Whether the last invocation rested and nothing woke it since. */
  readonly resting: boolean;
  stop(): Promise<void>;
}

export interface Cadence {
  intervalMs: number;
  /** The schedule's own period, which a resting function waits for (EventBridge: a minute). */
  tickMs: number;
}

export function startSchedule(
  name: string,
  handler: (event: unknown, context: Context) => Promise<{ rested?: boolean } | undefined>,
  cadence: Cadence,
  onError: (err: unknown) => void,
): Schedule {
  let running: Promise<void> | undefined;
  let stopped = false;
  let resting = false;
  let wakes = 0;
  let timer: NodeJS.Timeout | undefined;
  const next = (ms: number) => {
    clearTimeout(timer);
    if (!stopped) timer = setTimeout(() => void fire(), ms);
  };
  const invoke = async () => {
    const before = wakes;
    const start = Date.now();
    try {
      const answer = await handler(
        { source: 'aws.events', 'detail-type': 'Scheduled Event' },
        lambdaContext(name, 0),
      );
      // A wake during the invocation stands: its work may have come after the pass looked.
      resting = answer?.rested === true && before === wakes;
    } catch (err) {
      resting = false;
      onError(err);
    } finally {
      running = undefined;
      next(resting ? cadence.tickMs : nextPassIn(cadence.intervalMs, Date.now() - start));
    }
  };
  // One invocation at a time, as the stack's reserved concurrency of 1 does on AWS.
  const fire = () => {
    running ??= invoke();
    return running;
  };
  next(cadence.intervalMs);
  return {
    fire,
    wake() {
      wakes++;
      if (!resting) return;
      resting = false;
      next(0);
    },
    get resting() {
      return resting;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
