import { monotonicFactory } from 'ulid';

const nextUlid = monotonicFactory();

/** A server-generated message id: a ULID, so ids sort by the time they were made. */
export function newMessageId(now: number = Date.now()): string {
  return nextUlid(now);
}
