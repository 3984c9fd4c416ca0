import type { QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { type DocumentClient, paginateQuery } from '../aws/dynamodb.js';
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

/** How many items a query matches, over all its pages. */
export async function countAll(doc: DocumentClient, input: QueryCommandInput): Promise<number> {
  let total = 0;
  for await (const page of paginateQuery(doc, { ...input, Select: 'COUNT' })) total += page.Count ?? 0;
  return total;
}
