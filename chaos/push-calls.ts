import { existsSync, readFileSync } from 'node:fs';
import { groupBy, type Invariant } from './checks.js';
import type { History } from './history.js';
import type { PushCall } from './push-consumer.js';

/**
 * What the push queue's Lambda consumer did, from the calls file it appends to, and the
 * invariants its contract promises: per-key order of the calls, intact payloads. Whether every
 * accepted message was handled is the run's "no accepted message lost" check.
 */

/** The calls in the order they happened. A line cut short by a SIGKILL is left out. */
export function readPushCalls(file: string): PushCall[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line) => {
      try {
        return line ? [JSON.parse(line) as PushCall] : [];
      } catch {
        return [];
      }
    });
}

/** Ids whose handler call returned, so the consumer acked it (or will, on redelivery). */
export function handledIds(calls: readonly PushCall[]): Set<string> {
  return new Set(calls.filter((c) => c.phase === 'end' && c.ok).map((c) => c.id));
}

export interface PushFigures {
  /** Handler calls started. */
  calls: number;
  handled: number;
  failedAttempts: number;
  /** Calls that returned for a message that had returned before (at-least-once after a kill). */
  duplicates: number;
}

export function pushFigures(calls: readonly PushCall[]): PushFigures {
  const ends = calls.filter((c) => c.phase === 'end');
  const handled = handledIds(calls);
  return {
    calls: calls.filter((c) => c.phase === 'start').length,
    handled: handled.size,
    failedAttempts: ends.filter((c) => !c.ok).length,
    duplicates: ends.filter((c) => c.ok).length - handled.size,
  };
}

/**
 * Per key (produced in `seq` order, each once the previous was in the log): no call of a
 * message starts before every earlier message of its key has returned from a call. That also
 * rules out two messages of a key in the handler at once. A message called again after it
 * returned (a kill before its ack landed) is a duplicate, not an order violation.
 */
export function checkPushCalls(history: History, calls: readonly PushCall[]): Invariant[] {
  const at = (ms: number) => `+${((ms - history.startedAt) / 1000).toFixed(3)}s`;
  const order: string[] = [];
  for (const [key, list] of groupBy(calls, (c) => c.key ?? '(none)')) {
    const returned = new Set<number>();
    for (const c of list) {
      if (c.seq === undefined) continue;
      if (c.phase === 'end') {
        if (c.ok) returned.add(c.seq);
        continue;
      }
      for (let j = 0; j < c.seq; j++) {
        if (returned.has(j)) continue;
        order.push(`${key}: seq ${c.seq} called ${at(c.at)} (attempt ${c.attempt}) before seq ${j} returned`);
        break;
      }
    }
  }
  const sent = (c: PushCall) => history.produced.get(c.id);
  const intact = calls
    .filter((c) => c.phase === 'start' && (!c.intact || sent(c)?.seq !== c.seq))
    .map((c) => `${c.id} called ${at(c.at)} (attempt ${c.attempt}) with a payload other than the one sent`);
  return [
    { name: 'per-key order of the Lambda consumer on the push queue', ok: !order.length, violations: order },
    {
      name: 'every Lambda consumer call is of a message sent, with its payload intact',
      ok: !intact.length,
      violations: intact,
    },
  ];
}
