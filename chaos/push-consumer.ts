import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { leaseqConsumer } from '../functions/lambda-consumer/index.js';
import type { ChaosPayload } from './history.js';
import { CHAOS_PUSH } from './tenant.js';

/**
 * The Lambda consumer of a chaos run's ordered push queue, run by the runtime's event source.
 * It writes each call's start and end to a file with a synchronous append, so what it did
 * survives a SIGKILL of the runtime that runs it; the checks read that file (push-calls.ts).
 * One first attempt in ten fails, chosen by the id, so a replayed seed fails the same ones.
 */

/** The file the calls go to, set by the harness in the runtime's environment. */
export const CALLS_FILE_ENV = 'LEASEQ_CHAOS_CALLS';

export interface PushCall {
  phase: 'start' | 'end';
  id: string;
  key: string | null;
  seq: number | undefined;
  attempt: number;
  at: number;
  /** End: the handler returned (the consumer acks); false: it threw (a failed attempt). */
  ok?: boolean;
  /** Start: the payload is the one sent for this id and key. */
  intact?: boolean;
}

export const handler = leaseqConsumer<ChaosPayload | null>(
  async (message) => {
    const file = process.env[CALLS_FILE_ENV];
    const record = (call: PushCall) => {
      if (file) appendFileSync(file, `${JSON.stringify(call)}\n`);
    };
    const base = {
      id: message.message_id,
      key: message.key,
      seq: message.payload?.seq,
      attempt: message.attempt,
    };
    record({
      phase: 'start',
      ...base,
      at: Date.now(),
      intact: message.payload?.id === message.message_id && (message.payload.key ?? null) === message.key,
    });
    // Some work, so a kill can land while a message is in hand.
    await sleep(hash(message.message_id) % 20);
    const ok = !(message.attempt === 1 && hash(message.message_id) % 10 === 0);
    record({ phase: 'end', ...base, at: Date.now(), ok });
    if (!ok) throw new Error('chaos: a failing first attempt');
  },
  { queue: CHAOS_PUSH.queue, consumer: CHAOS_PUSH.consumer },
);

function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}
