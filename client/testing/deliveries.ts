import type { Scheduler } from 'fast-check';
import type { ReceivedMessage } from '../types.js';
import type { BatchHandler, Handler } from '../worker.js';

/**
 * Deliveries as a queue makes them, to a consumer under test, with the faults a redelivery
 * comes from: a crash before or after any call its handler makes through `ctx.call`, or between
 * its return and the ack; a call that fails; and, through a fast-check scheduler, the calls of
 * two copies (or of a batch) interleaved in any order.
 */

/** A consumer under test: its handler, and what it did, read after each scenario. */
export interface ConsumerUnderTest<T> {
  /** The handler the Worker runs; or give `batchHandler`. */
  handler?: Handler<T>;
  batchHandler?: BatchHandler<T>;
  /** What the handler did so far (rows, recorded calls): compared with deep equality. */
  effect(): unknown;
  /**
   * The idempotency keys the handler sent downstream so far, in order: a redelivery must send
   * only keys the first attempt sent.
   */
  outboundKeys?(): readonly string[];
}

export type Fault =
  /** The process dies just before call `at` of the delivery, or just after it returned. */
  | { kind: 'crash'; at: number; when: 'before' | 'after' }
  /** The handler returned, and the process dies before the ack. */
  | { kind: 'crash'; when: 'before-ack' }
  /** Call `at` throws, as a dependency's transient error would. */
  | { kind: 'fail'; at: number };

export interface Delivered {
  /** Calls the handler made through ctx.call. */
  calls: number;
  /** Messages acked: the rest come back. */
  acked: ReceivedMessage<unknown>[];
  /** The delivery crashed: nothing was acked. */
  crashed: boolean;
  /** What the handler threw (a single handler, or a batch handler as a whole). */
  error?: unknown;
}

/** A promise that never settles: what a handler awaits once its process has died. */
const NEVER = new Promise<never>(() => {});

export class InjectedFailure extends Error {
  constructor(dependency: string, at: number) {
    super(`${dependency} failed (call ${at + 1}, injected by the conformance kit)`);
    this.name = 'InjectedFailure';
  }
}

/** Builds the messages of a scenario: each delivery of one is a copy with its attempt. */
export function message<T>(
  id: string,
  key: string | null,
  payload: T,
  attempt: number,
  now: number,
): ReceivedMessage<T> {
  return {
    message_id: id,
    receipt: `conformance:${id}:${attempt}`,
    key,
    // As the wire carries it: JSON.
    payload: JSON.parse(JSON.stringify(payload)) as T,
    headers: {},
    attempt,
    enqueued_at: new Date(now).toISOString(),
    lease_expires_at: new Date(now + 60_000).toISOString(),
  };
}

/**
 * Delivers `messages` once, as the Worker would: a batch handler takes them all at once; a
 * single handler takes them in turn (a key's batch of an ordered queue), and the first that fails
 * gives the rest back.
 */
export async function deliver<T>(
  consumer: ConsumerUnderTest<T>,
  messages: ReceivedMessage<T>[],
  options: { fault?: Fault; scheduler?: Scheduler; label?: string } = {},
): Promise<Delivered> {
  const { fault, scheduler, label = 'delivery' } = options;
  const lease = new AbortController();
  let calls = 0;
  let crash!: () => void;
  const crashed = new Promise<'crashed'>((resolve) => {
    crash = () => {
      lease.abort(new Error('the process died (injected by the conformance kit)'));
      resolve('crashed');
    };
  });
  const call = async <R>(dependency: string, fn: () => Promise<R>): Promise<R> => {
    if (lease.signal.aborted) return NEVER;
    const at = calls++;
    if (scheduler) await scheduler.schedule(Promise.resolve(), `${label}: ${dependency} (call ${at + 1})`);
    if (lease.signal.aborted) return NEVER;
    if (fault?.kind === 'crash' && fault.when === 'before' && fault.at === at) {
      crash();
      return NEVER;
    }
    if (fault?.kind === 'fail' && fault.at === at) throw new InjectedFailure(dependency, at);
    const result = await fn();
    if (fault?.kind === 'crash' && fault.when === 'after' && fault.at === at) {
      crash();
      return NEVER;
    }
    return result;
  };
  const extend = async (seconds: number) => ({
    lease_expires_at: new Date(Date.now() + seconds * 1000).toISOString(),
    max_lease_expires_at: new Date(Date.now() + 3_600_000).toISOString(),
  });

  // A single handler's messages are acked one by one: those before a crash stay acked.
  const acked: ReceivedMessage<unknown>[] = [];
  const run = async (): Promise<{ error?: unknown }> => {
    if (consumer.batchHandler) {
      try {
        const failures = (await consumer.batchHandler(messages, { signal: lease.signal, call })) ?? [];
        const failed = new Set(failures.map((f) => f.message));
        acked.push(...messages.filter((m) => !failed.has(m)));
        return {};
      } catch (error) {
        return { error };
      }
    }
    for (const [i, m] of messages.entries()) {
      try {
        await consumer.handler?.(m, { signal: lease.signal, extend, call });
      } catch (error) {
        return { error };
      }
      const last = i === messages.length - 1;
      if (!(last && fault?.kind === 'crash' && fault.when === 'before-ack')) acked.push(m);
    }
    return {};
  };
  const outcome = await Promise.race([run(), crashed]);
  const died = outcome === 'crashed' || (fault?.kind === 'crash' && fault.when === 'before-ack');
  if (died) return { calls, acked: consumer.batchHandler ? [] : acked, crashed: true };
  return { calls, acked, crashed: false, ...outcome };
}
