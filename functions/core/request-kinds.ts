/**
 * The kinds of request a queue's usage counts (GET /usage), each a running total on the queue's
 * storage counter item (store/counters.ts). Its own small file: every request names its kind, and
 * the api's bundle carries this, not the usage arithmetic (core/usage.ts, loaded on first ask).
 */
export const REQUEST_KINDS = ['produce', 'receive', 'ack', 'nack', 'extend', 'other'] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];

/** The running total a kind of request adds to. */
export function requestCounter(kind: RequestKind): `requests_${RequestKind}` {
  return `requests_${kind}`;
}
