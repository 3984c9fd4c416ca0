import { monotonicFactory } from 'ulid';

const nextUlid = monotonicFactory();

/** A server-generated message id: a ULID, so ids sort by the time they were made. */
export function newMessageId(now: number = Date.now()): string {
  return nextUlid(now);
}

/**
 * A token that names one write of a state others may clear (a hold area, a key's block): its time
 * (ms × 1000) and a draw, so who clears it with the token read never clears a later one.
 */
export function writeToken(now: number = Date.now()): number {
  return now * 1000 + Math.floor(Math.random() * 1000);
}
