import { sleep } from '../core/async.js';

/** Small helpers shared by the DynamoDB adapters. */

export function isConditionFailed(err: unknown): boolean {
  return (err as { name?: string })?.name === 'ConditionalCheckFailedException';
}

/**
 * Batch calls answer with what they did not process (under throttling): call again with
 * the rest, backing off, until nothing is left.
 */
export async function retryUnprocessed<T>(
  initial: T[],
  call: (pending: T[]) => Promise<T[]>,
  maxRounds = 8,
): Promise<void> {
  let pending = initial;
  for (let round = 0; pending.length > 0; round++) {
    if (round >= maxRounds)
      throw Object.assign(new Error('unprocessed items left'), { name: 'ThrottlingException' });
    if (round > 0) await sleep(Math.min(1000, 25 * 2 ** round));
    pending = await call(pending);
  }
}
