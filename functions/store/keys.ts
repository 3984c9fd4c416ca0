/**
 * The DynamoDB layout: every item's keys are built here and nowhere else.
 * One table per tenant, string keys `pk` / `sk`, TTL attribute `ttl` (garbage collection
 * only: every read checks its own expiry).
 */

export const TTL_ATTRIBUTE = 'ttl';

export interface ItemKey {
  pk: string;
  sk: string;
}

/** Producer dedup record of one message id: exists once the message is in the log. */
export function dedupKey(queue: string, messageId: string): ItemKey {
  return { pk: `Q#${queue}#D#${messageId}`, sk: 'D' };
}
