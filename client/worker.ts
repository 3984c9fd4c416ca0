import { AckBatcher } from './ack-batcher.js';
import type { LeaseqClient } from './client.js';
import { NonRetryableError, RetryAfterError, StaleReceiptError } from './errors.js';
import { MessageLease } from './lease.js';
import { AdaptiveLimit, isOverload, type LimitOptions, type LimitStats } from './limiter.js';
import { backoffMs, sleep } from './retry.js';
import type { AckStatus, ExtendResult, ReceivedMessage } from './types.js';

/**
 * A pull consumer loop (docs/contract.md, "Guarantees"): long-polls for at most as many messages as
 * it has free handler slots, runs each handler with heartbeats that keep its lease, acks
 * what returned and nacks what threw. Transient errors back off; the loop never dies.
 * With a batch handler instead, each slot takes up to `batchSize` messages at once (one bulk
 * write for all of them, say) and says which of them failed.
 */

export interface HandlerContext {
  /** Aborts when this worker no longer holds the message: lease lost or expired, or stop. */
  signal: AbortSignal;
  /** Extends the lease now to `seconds`; heartbeats then keep that length. */
  extend(seconds: number): Promise<ExtendResult>;
  /** Runs `fn` within the limit of `dependency` (one of the Worker's `limits`): it waits for a slot. */
  call<R>(dependency: string, fn: () => Promise<R>): Promise<R>;
}

export type Handler<T> = (message: ReceivedMessage<T>, ctx: HandlerContext) => Promise<void>;

export interface BatchContext {
  /**
   * Aborts when this worker no longer holds one of the messages (its lease lost or expired) or at
   * stop: what the handler does after that may be done again by another consumer.
   */
  signal: AbortSignal;
  /** Runs `fn` within the limit of `dependency` (one of the Worker's `limits`): it waits for a slot. */
  call<R>(dependency: string, fn: () => Promise<R>): Promise<R>;
}

/** One message of a batch that failed, with what it threw (a NonRetryableError, a RetryAfterError…). */
export interface BatchItemFailure<T> {
  message: ReceivedMessage<T>;
  error: unknown;
}

/**
 * Handles a batch: returning nothing acks them all; returning failures nacks those (each as a
 * throwing single handler's would be) and acks the rest; throwing nacks them all with its error.
 */
export type BatchHandler<T> = (
  messages: ReceivedMessage<T>[],
  ctx: BatchContext,
) => Promise<undefined | readonly BatchItemFailure<T>[]>;

export type WorkerPhase = 'receive' | 'handler' | 'heartbeat' | 'ack' | 'nack' | 'release';

export interface WorkerOptions<T> {
  client: LeaseqClient;
  queue: string;
  /** Handles one message; or give `batchHandler` instead. */
  handler?: Handler<T>;
  /** Handles up to `batchSize` messages at once; or give `handler` instead. */
  batchHandler?: BatchHandler<T>;
  /** Messages a batch handler takes at most (one receive), 1-100; default 10. */
  batchSize?: number;
  /** Handlers (or batches) running at once; default 4 (1 for batches). */
  concurrency?: number;
  /** Lease asked for on receive; default the queue's. */
  leaseSeconds?: number;
  /** Extend each lease every lease/3 while its handler runs; default true. */
  heartbeat?: boolean;
  /** Long-poll wait of each receive, 0-20; default 20. */
  waitSeconds?: number;
  consumerId?: string;
  /**
   * The dependencies its handlers call through `ctx.call`, each with an adaptive concurrency
   * limit (limiter.ts): options, or an AdaptiveLimit shared with the Workers of other queues whose
   * handlers call the same dependency. While one is full the Worker fetches nothing more.
   */
  limits?: Record<string, LimitOptions | AdaptiveLimit>;
  /** Every error the worker handled (a failed handler was nacked); default console.error. */
  onError?: (err: unknown, context: { phase: WorkerPhase; message?: ReceivedMessage<T> }) => void;
  /** What a service may log or count, as sqs-consumer's events offer it. A hook that throws is ignored. */
  on?: WorkerHooks<T>;
}

export interface WorkerHooks<T> {
  /** The handler returned and the message was acked; `ms` is the handler's (or its batch's) time. */
  processed?: (message: ReceivedMessage<T>, ms: number) => void;
  /** The handler threw and the message was nacked (retried, or dead-lettered). */
  failed?: (message: ReceivedMessage<T>, err: unknown) => void;
  /** A long poll ended with nothing. */
  empty?: () => void;
  /**
   * The handler met an overloaded dependency (a throttling answer, a RetryAfterError): the message
   * was given back for later without using an attempt.
   */
  throttled?: (message: ReceivedMessage<T>, err: unknown) => void;
  /** A dependency's limit changed. */
  limit?: (dependency: string, stats: LimitStats) => void;
  /** stop() finished: nothing runs and nothing is held any more. */
  stopped?: () => void;
}

interface Job<T> {
  message: ReceivedMessage<T>;
  lease: MessageLease;
  /** The handler returned or threw; only the ack or nack is left. */
  settled: boolean;
  /** Given back at stop: the receipt is no longer this worker's to ack. */
  released: boolean;
  done: Promise<void>;
}

const MAX_ERROR_TEXT = 4096;
/** A nack's `retry_after_seconds` is at most 12 hours. */
const MAX_RETRY_AFTER_SECONDS = 12 * 3600;

/** How long a message that met an overloaded dependency waits, unless a RetryAfterError says. */
const OVERLOAD_RETRY_SECONDS = 1;

export interface WorkerStats {
  queue: string;
  concurrency: number;
  /** Handler calls running. */
  running: number;
  limits: Record<string, LimitStats>;
}

function retryAfterSeconds(seconds: number): number | undefined {
  return Number.isFinite(seconds)
    ? Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(0, Math.ceil(seconds)))
    : undefined;
}

export class Worker<T = unknown> {
  private readonly concurrency: number;
  /** Messages one handler call takes: 1, or a batch handler's batch size. */
  private readonly batchSize: number;
  /** Handler calls running: a job each, or a batch of jobs each. */
  private running = 0;
  private readonly waitSeconds: number;
  private readonly limits: ReadonlyMap<string, AdaptiveLimit>;
  private readonly unsubscribe: (() => void)[] = [];
  private readonly jobs = new Set<Job<T>>();
  private readonly releases = new Set<Promise<void>>();
  private readonly acks: AckBatcher;
  /** Stop was asked: no new poll starts. */
  private readonly halting = new AbortController();
  /** The stop's deadline passed: the receive still waiting is abandoned. */
  private readonly polling = new AbortController();
  private loop: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private pollStartedAt: number | undefined;
  /** The long poll in progress: its id names it to the server, its controller drops the request. */
  private currentPoll: { id: string; abort: AbortController } | undefined;
  /** Until then an abandoned long poll may still lease messages on the server. */
  private abandonedPollUntil = 0;

  constructor(private readonly options: WorkerOptions<T>) {
    if (!options.handler === !options.batchHandler)
      throw new TypeError('a Worker takes a handler or a batchHandler: one of them');
    this.concurrency = Math.max(1, options.concurrency ?? (options.batchHandler ? 1 : 4));
    this.batchSize = options.batchHandler ? Math.min(100, Math.max(1, options.batchSize ?? 10)) : 1;
    this.waitSeconds = options.waitSeconds ?? 20;
    this.limits = new Map(
      Object.entries(options.limits ?? {}).map(([name, limit]) => [
        name,
        limit instanceof AdaptiveLimit ? limit : new AdaptiveLimit(limit),
      ]),
    );
    this.acks = new AckBatcher((receipts) => options.client.ack(options.queue, receipts));
  }

  start(): void {
    if (this.loop) throw new Error('this worker was already started');
    for (const [name, limit] of this.limits)
      this.unsubscribe.push(
        limit.onChange((stats) => {
          this.hook('limit', name, stats);
          // A limit that grew may let the loop fetch again.
          this.wake?.();
        }),
      );
    this.loop = this.poll();
  }

  /** What runs now, and each dependency's limit. */
  stats(): WorkerStats {
    return {
      queue: this.options.queue,
      concurrency: this.concurrency,
      running: this.running,
      limits: Object.fromEntries([...this.limits].map(([name, limit]) => [name, limit.stats()])),
    };
  }

  /**
   * Starts no new poll and waits up to `timeoutMs` for the receive in progress (whose messages
   * are handled like the others) and the running handlers, acking what finishes. Then it
   * aborts the rest and releases their messages with a nack, so another consumer can take
   * them at once. An idle worker therefore stops when its long poll ends (`waitSeconds`): the
   * server cannot tell that a caller went away, and a poll abandoned earlier would lease
   * messages that arrive during the rest of its wait to nobody until their lease expires.
   */
  stop(options: { timeoutMs?: number } = {}): Promise<void> {
    this.stopping ??= this.shutdown(options.timeoutMs ?? 30_000);
    return this.stopping;
  }

  private async poll(): Promise<void> {
    for (let failures = 0; !this.halting.signal.aborted; ) {
      const free = this.room() * this.batchSize;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        continue;
      }
      let messages: ReceivedMessage<T>[];
      try {
        messages = await this.receive(free);
        failures = 0;
      } catch (err) {
        // Stopping: the poll was called off (or abandoned), not failed.
        if (this.polling.signal.aborted || this.halting.signal.aborted) break;
        this.report(err, 'receive');
        await sleep(backoffMs({ maxRetries: 0, baseMs: 1000 }, failures++, err), this.halting.signal);
        continue;
      }
      if (!messages.length) this.hook('empty');
      // What a limit that shrank during the poll cannot start now goes back, no attempt used.
      const startable = this.polling.signal.aborted ? 0 : Math.max(0, this.room()) * this.batchSize;
      for (const message of messages.splice(startable)) this.release(message);
      // Past the stop's deadline there is no time left to handle them: hand them back.
      if (this.polling.signal.aborted) for (const message of messages) this.release(message);
      // An ordered queue's per-key batch: the key's messages one after another in one slot.
      else if (!this.options.batchHandler) for (const group of byKey(messages)) this.run(group);
      else
        for (let i = 0; i < messages.length; i += this.batchSize)
          this.run(messages.slice(i, i + this.batchSize));
    }
  }

  /**
   * Handler calls it may start now: its concurrency, and no more than any dependency's limit (and
   * none while calls wait for one of them).
   */
  private room(): number {
    let room = this.concurrency - this.running;
    for (const limit of this.limits.values())
      room = Math.min(room, limit.limit - this.running, limit.waiting ? 0 : room);
    return room;
  }

  /** Runs `fn` within a dependency's limit. */
  private call<R>(dependency: string, fn: () => Promise<R>): Promise<R> {
    const limit = this.limits.get(dependency);
    if (!limit)
      return Promise.reject(new TypeError(`no limit named ${dependency}: declare it in the Worker's limits`));
    return limit.run(fn);
  }

  private async receive(free: number): Promise<ReceivedMessage<T>[]> {
    this.pollStartedAt = Date.now();
    const poll = { id: `poll-${crypto.randomUUID()}`, abort: new AbortController() };
    this.currentPoll = poll;
    try {
      return await this.options.client.receive<T>(
        this.options.queue,
        {
          max_messages: Math.min(free, this.batchSize === 1 ? 100 : this.batchSize),
          wait_seconds: this.waitSeconds,
          poll_id: poll.id,
          ...(this.options.leaseSeconds !== undefined ? { lease_seconds: this.options.leaseSeconds } : {}),
          ...(this.options.consumerId !== undefined ? { consumer_id: this.options.consumerId } : {}),
        },
        { signal: AbortSignal.any([this.polling.signal, poll.abort.signal]) },
      );
    } finally {
      this.pollStartedAt = undefined;
      this.currentPoll = undefined;
    }
  }

  /**
   * An idle worker's stop calls its long poll off rather than waiting it out: the server gives
   * back what the poll leases from then on (no attempt used), and the request is dropped. Only
   * an answer already on its way when the call-off lands is lost, its messages back after their
   * lease. If the call-off fails, the poll is waited out as before.
   */
  private async callOffPoll(): Promise<void> {
    const poll = this.currentPoll;
    if (!poll) return;
    try {
      await this.options.client.cancelReceive(this.options.queue, poll.id, { signal: this.polling.signal });
    } catch (err) {
      this.report(err, 'receive');
      return;
    }
    poll.abort.abort(new Error('the worker stopped: its long poll was called off'));
  }

  /** One handler call: a message, or a batch of them; or a key's messages, one call each in turn. */
  private run(messages: ReceivedMessage<T>[]): void {
    const jobs = messages.map((message): Job<T> => {
      const lease = new MessageLease(message as ReceivedMessage<unknown>, {
        client: this.options.client,
        queue: this.options.queue,
        heartbeat: this.options.heartbeat ?? true,
        onHeartbeatError: (err) => this.report(err, 'heartbeat', message),
      });
      return { message, lease, settled: false, released: false, done: Promise.resolve() };
    });
    for (const job of jobs) this.jobs.add(job);
    this.running++;
    const processed = this.options.batchHandler
      ? this.process(jobs).then(() => undefined)
      : this.inTurn(jobs);
    const done = processed.finally(() => {
      for (const job of jobs) this.jobs.delete(job);
      this.running--;
      this.wake?.();
    });
    for (const job of jobs) job.done = done;
  }

  /** Answers whether every message of `jobs` was handled and acked. */
  private async process(jobs: Job<T>[]): Promise<boolean> {
    const started = Date.now();
    const failures = await this.handle(jobs);
    const ms = Date.now() - started;
    const settled = await Promise.all(
      jobs.map((job) => {
        job.settled = true;
        job.lease.stop();
        return job.released || job.lease.lost ? false : this.settle(job, failures.get(job.message), ms);
      }),
    );
    return settled.every(Boolean);
  }

  /**
   * A key's messages in the order they came (a per-key batch of an ordered queue), each after the
   * one before is acked: one that fails, is lost or is stopped gives the rest back, since nothing
   * of the key may be handled before its retry.
   */
  private async inTurn(jobs: Job<T>[]): Promise<void> {
    for (const [i, job] of jobs.entries()) {
      if (!this.halting.signal.aborted && (await this.process([job]))) continue;
      for (const rest of jobs.slice(i + 1)) {
        rest.settled = true;
        rest.released = true;
        rest.lease.stop();
        this.release(rest.message);
      }
      return;
    }
  }

  /** Runs the handler: what failed, each with its error. */
  private async handle(jobs: Job<T>[]): Promise<Map<ReceivedMessage<T>, { err: unknown }>> {
    const { handler, batchHandler } = this.options;
    const messages = jobs.map((job) => job.message);
    try {
      if (handler) {
        const [job] = jobs as [Job<T>];
        await handler(job.message, {
          signal: job.lease.signal,
          extend: (s) => job.lease.extend(s),
          call: (dependency, fn) => this.call(dependency, fn),
        });
        return new Map();
      }
      const signal = AbortSignal.any(jobs.map((job) => job.lease.signal));
      const failed =
        (await batchHandler?.(messages, { signal, call: (dependency, fn) => this.call(dependency, fn) })) ??
        [];
      return new Map(failed.map((f) => [f.message, { err: f.error }]));
    } catch (err) {
      return new Map(messages.map((m) => [m, { err }]));
    }
  }

  /** The ack of a message whose handler returned, or the nack of one that failed: whether it was acked. */
  private async settle(job: Job<T>, failure: { err: unknown } | undefined, ms: number): Promise<boolean> {
    const { message } = job;
    if (!failure) {
      try {
        const status = await this.acks.ack(message.receipt);
        if (status !== 'acked') this.report(lateAck(status), 'ack', message);
        else this.hook('processed', message, ms);
        return status === 'acked';
      } catch (err) {
        this.report(err, 'ack', message);
        return false;
      }
    }
    this.report(failure.err, 'handler', message);
    // An overloaded dependency is not the message's failure: back for later, no attempt used.
    if (isOverload(failure.err)) {
      const seconds = failure.err instanceof RetryAfterError ? failure.err.seconds : OVERLOAD_RETRY_SECONDS;
      if (await this.giveBack(message, retryAfterSeconds(seconds) ?? OVERLOAD_RETRY_SECONDS))
        this.hook('throttled', message, failure.err);
      return false;
    }
    const retryable = !(failure.err instanceof NonRetryableError);
    const retryAfter =
      failure.err instanceof RetryAfterError ? retryAfterSeconds(failure.err.seconds) : undefined;
    try {
      await this.options.client.nack(this.options.queue, message.receipt, {
        retryable,
        error: errorText(failure.err),
        ...(retryAfter !== undefined ? { retry_after_seconds: retryAfter } : {}),
      });
      this.hook('failed', message, failure.err);
    } catch (err) {
      this.report(err, 'nack', message);
    }
    return false;
  }

  private release(message: ReceivedMessage<T>): void {
    // A released message is ready again at once, unless an abandoned long poll could still
    // take it: the server cannot tell that the poll's caller has gone.
    const retryAfter = Math.max(0, Math.ceil((this.abandonedPollUntil - Date.now()) / 1000));
    const released = this.giveBack(message, retryAfter).then(() => undefined);
    this.releases.add(released);
    released.finally(() => this.releases.delete(released));
  }

  /** Gives a message back without using an attempt, ready after `seconds`: whether it was. */
  private async giveBack(message: ReceivedMessage<T>, seconds: number): Promise<boolean> {
    try {
      await this.options.client.nack(this.options.queue, message.receipt, {
        retry_after_seconds: seconds,
        release: true,
      });
      return true;
    } catch (err) {
      if (!(err instanceof StaleReceiptError)) this.report(err, 'release', message);
      return false;
    }
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    this.halting.abort();
    this.wake?.();
    if (this.running === 0) await this.callOffPoll();
    const deadline = new AbortController();
    const drained = (async () => {
      await this.loop;
      await Promise.all([...this.jobs].map((job) => job.done));
    })();
    await Promise.race([drained, sleep(timeoutMs, deadline.signal)]);
    deadline.abort();

    if (this.pollStartedAt !== undefined) {
      this.abandonedPollUntil = this.pollStartedAt + this.waitSeconds * 1000;
    }
    this.polling.abort(new Error('the worker stopped'));
    await this.loop;
    const settling: Promise<void>[] = [];
    for (const job of this.jobs) {
      // A job whose handler already returned only has its ack left: let it finish.
      if (job.settled) {
        settling.push(job.done);
        continue;
      }
      job.released = true;
      job.lease.abort(new Error('the worker stopped before the handler finished'));
      this.release(job.message);
    }
    await Promise.all([...settling, ...this.releases]);
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
    this.hook('stopped');
  }

  private hook<K extends keyof WorkerHooks<T>>(
    name: K,
    ...args: Parameters<NonNullable<WorkerHooks<T>[K]>>
  ): void {
    try {
      (this.options.on?.[name] as ((...a: typeof args) => void) | undefined)?.(...args);
    } catch {
      // A service's logging must not stop the loop or lose a message.
    }
  }

  private report(err: unknown, phase: WorkerPhase, message?: ReceivedMessage<T>): void {
    const { onError } = this.options;
    if (!onError) {
      console.error(
        `leaseq worker (${this.options.queue}) ${phase}${message ? ` ${message.message_id}` : ''}:`,
        err,
      );
      return;
    }
    try {
      onError(err, message ? { phase, message } : { phase });
    } catch {
      // A failing onError must not stop the loop; there is nobody left to tell.
    }
  }
}

/** An ack the server refused: for a stale receipt, another consumer may already have the message. */
function lateAck(status: AckStatus): Error {
  const message = `the ack answered ${status}: the lease ended before the handler finished`;
  return status === 'stale_receipt'
    ? new StaleReceiptError({ code: 'STALE_RECEIPT', status: 409, message })
    : new Error(`the ack answered ${status}`);
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.slice(0, MAX_ERROR_TEXT);
}

/**
 * Messages grouped by key in the order they came, a group per key (a message without a key is a
 * group of its own): an ordered queue's per-key batch is handled in turn, other keys beside it.
 */
function byKey<T>(messages: readonly ReceivedMessage<T>[]): ReceivedMessage<T>[][] {
  const groups = new Map<string | ReceivedMessage<T>, ReceivedMessage<T>[]>();
  for (const m of messages) {
    const at = m.key ?? m;
    groups.set(at, [...(groups.get(at) ?? []), m]);
  }
  return [...groups.values()];
}
