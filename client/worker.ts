import { AckBatcher } from './ack-batcher.js';
import type { LeaseqClient } from './client.js';
import { NonRetryableError, RetryAfterError, StaleReceiptError } from './errors.js';
import { MessageLease } from './lease.js';
import { AdaptiveLimit, isOverload, type LimitOptions, type LimitStats } from './limiter.js';
import { backoffMs, sleep } from './retry.js';
import { type QueueSlots, type SlotOptions, SlotShare } from './slots.js';
import type { AckStatus, ExtendResult, ReceivedMessage } from './types.js';
import type { WakeChannel } from './wake-channel.js';

/**
 * A pull consumer loop (docs/contract.md, "Guarantees"): long-polls for at most as many messages as
 * it has free handler slots, runs each handler with heartbeats that keep its lease, acks
 * what returned and nacks what threw. Transient errors back off; the loop never dies.
 * With a batch handler instead, each slot takes up to `batchSize` messages at once (one bulk
 * write for all of them, say) and says which of them failed. One Worker may serve several queues,
 * dividing its slots among them by weight (slots.ts).
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

/** How a Worker serves one queue: its handler, and its part of the Worker's slots (slots.ts). */
export interface QueueOptions<T = unknown> extends SlotOptions {
  /** Handles one message; or give `batchHandler` instead. */
  handler?: Handler<T>;
  /** Handles up to `batchSize` messages at once; or give `handler` instead. */
  batchHandler?: BatchHandler<T>;
  /** Messages a batch handler takes at most (one receive), 1-100; default 10. */
  batchSize?: number;
  /** Lease asked for on receive; default the queue's. */
  leaseSeconds?: number;
  consumerId?: string;
  /**
   * The Worker's `limits` its handlers call; default all of them. While one of them is full, the
   * Worker fetches nothing more for this queue.
   */
  uses?: readonly string[];
}

export interface WorkerOptions<T> extends Omit<QueueOptions<T>, keyof SlotOptions | 'uses'> {
  client: LeaseqClient;
  /** The queue it serves, with `handler` or `batchHandler`; or give `queues` instead. */
  queue?: string;
  /**
   * Several queues it serves, by name, each with its handler and its weight, min and max of the
   * Worker's slots; or give `queue` instead.
   */
  // biome-ignore lint/suspicious/noExplicitAny: each queue's handler has its own payload type.
  queues?: Record<string, QueueOptions<any>>;
  /** Handlers (or batches) running at once, over all its queues; default 4 (1 for one queue's batches). */
  concurrency?: number;
  /** Extend each lease every lease/3 while its handler runs; default true. */
  heartbeat?: boolean;
  /** Long-poll wait of each receive, 0-20; default 20. */
  waitSeconds?: number;
  /**
   * The dependencies its handlers call through `ctx.call`, each with an adaptive concurrency
   * limit (limiter.ts): options, or an AdaptiveLimit shared with the Workers of other queues whose
   * handlers call the same dependency. While one is full the Worker fetches nothing more.
   */
  limits?: Record<string, LimitOptions | AdaptiveLimit>;
  /** Every error the worker handled (a failed handler was nacked); default console.error. */
  onError?: (
    err: unknown,
    context: { phase: WorkerPhase; queue?: string; message?: ReceivedMessage<T> },
  ) => void;
  /** What a service may log or count, as sqs-consumer's events offer it. A hook that throws is ignored. */
  on?: WorkerHooks<T>;
}

export interface WorkerHooks<T> {
  /** The handler returned and the message was acked; `ms` is the handler's (or its batch's) time. */
  processed?: (message: ReceivedMessage<T>, ms: number, queue: string) => void;
  /** The handler threw and the message was nacked (retried, or dead-lettered). */
  failed?: (message: ReceivedMessage<T>, err: unknown, queue: string) => void;
  /** A long poll ended with nothing. */
  empty?: (queue: string) => void;
  /**
   * The handler met an overloaded dependency (a throttling answer, a RetryAfterError): the message
   * was given back for later without using an attempt.
   */
  throttled?: (message: ReceivedMessage<T>, err: unknown, queue: string) => void;
  /** A dependency's limit changed. */
  limit?: (dependency: string, stats: LimitStats) => void;
  /** A queue's share of the slots changed: it became empty, or had work again. */
  slots?: (queue: string, stats: QueueSlots) => void;
  /** stop() finished: nothing runs and nothing is held any more. */
  stopped?: () => void;
}

/** One queue a Worker serves, and its long poll. */
interface Lane<T> {
  queue: string;
  options: QueueOptions<T>;
  /** Messages one handler call takes: 1, or a batch handler's batch size. */
  batchSize: number;
  limits: AdaptiveLimit[];
  acks: AckBatcher;
  loop?: Promise<void>;
  pollStartedAt?: number;
  /** The long poll in progress: its id names it to the server, its controller drops the request. */
  currentPoll?: { id: string; abort: AbortController };
  /** Until then an abandoned long poll may still lease messages on the server. */
  abandonedPollUntil: number;
}

interface Job<T> {
  lane: Lane<T>;
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

/** How long a receive waits for its wake channel to connect before it long-polls instead. */
const CHANNEL_READY_MS = 3000;

/** How long a message that met an overloaded dependency waits, unless a RetryAfterError says. */
const OVERLOAD_RETRY_SECONDS = 1;

export interface WorkerStats {
  concurrency: number;
  /** Handler calls running. */
  running: number;
  /** Each queue's slots: its weight, share and running handler calls. */
  queues: Record<string, QueueSlots>;
  limits: Record<string, LimitStats>;
}

function retryAfterSeconds(seconds: number): number | undefined {
  return Number.isFinite(seconds)
    ? Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(0, Math.ceil(seconds)))
    : undefined;
}

export class Worker<T = unknown> {
  private readonly concurrency: number;
  private readonly waitSeconds: number;
  private readonly limits: ReadonlyMap<string, AdaptiveLimit>;
  private readonly slots: SlotShare;
  private readonly lanes: Lane<T>[];
  private readonly unsubscribe: (() => void)[] = [];
  private readonly jobs = new Set<Job<T>>();
  private readonly releases = new Set<Promise<void>>();
  /** Stop was asked: no new poll starts. */
  private readonly halting = new AbortController();
  /** The stop's deadline passed: the receive still waiting is abandoned. */
  private readonly polling = new AbortController();
  private started = false;
  /** Where its receives wait for admissions, if its client has a `channelUrl` (wake-channel.ts). */
  private channel: WakeChannel | undefined;
  private stopping: Promise<void> | undefined;
  /** Loops waiting for room: each wakes when a handler ends or a limit changes. */
  private readonly waiting = new Set<() => void>();

  constructor(private readonly options: WorkerOptions<T>) {
    const queues = lanesOf(options);
    const batchesOnly = Object.values(queues).every((q) => q.batchHandler);
    this.concurrency = Math.max(1, options.concurrency ?? (batchesOnly ? 1 : 4));
    this.waitSeconds = options.waitSeconds ?? 20;
    this.limits = new Map(
      Object.entries(options.limits ?? {}).map(([name, limit]) => [
        name,
        limit instanceof AdaptiveLimit ? limit : new AdaptiveLimit(limit),
      ]),
    );
    this.slots = new SlotShare(this.concurrency);
    this.lanes = Object.entries(queues).map(([queue, q]) => {
      if (!q.handler === !q.batchHandler)
        throw new TypeError(`a Worker takes a handler or a batchHandler for ${queue}: one of them`);
      this.slots.add(queue, q);
      const uses = q.uses ?? [...this.limits.keys()];
      return {
        queue,
        options: q,
        batchSize: q.batchHandler ? Math.min(100, Math.max(1, q.batchSize ?? 10)) : 1,
        limits: uses.map((name) => this.limitOf(name, queue)),
        acks: new AckBatcher((receipts) => options.client.ack(queue, receipts)),
        abandonedPollUntil: 0,
      };
    });
  }

  start(): void {
    if (this.started) throw new Error('this worker was already started');
    this.started = true;
    for (const [name, limit] of this.limits)
      this.unsubscribe.push(
        limit.onChange((stats) => {
          this.hook('limit', name, stats);
          // A limit that grew may let a loop fetch again.
          this.wakeAll();
        }),
      );
    this.channel = this.options.client.openWakeChannel();
    this.channel?.connection();
    for (const lane of this.lanes) lane.loop = this.poll(lane);
  }

  /** What runs now: each queue's slots, and each dependency's limit. */
  stats(): WorkerStats {
    return {
      concurrency: this.concurrency,
      running: this.slots.running,
      queues: Object.fromEntries(this.lanes.map(({ queue }) => [queue, this.slots.stats(queue)])),
      limits: Object.fromEntries([...this.limits].map(([name, limit]) => [name, limit.stats()])),
    };
  }

  /**
   * Starts no new poll and waits up to `timeoutMs` for the receives in progress (whose messages
   * are handled like the others) and the running handlers, acking what finishes. Then it
   * aborts the rest and releases their messages with a nack, so another consumer can take
   * them at once. An idle worker therefore stops when its long polls end (`waitSeconds`): the
   * server cannot tell that a caller went away, and a poll abandoned earlier would lease
   * messages that arrive during the rest of its wait to nobody until their lease expires.
   */
  stop(options: { timeoutMs?: number } = {}): Promise<void> {
    this.stopping ??= this.shutdown(options.timeoutMs ?? 30_000);
    return this.stopping;
  }

  private async poll(lane: Lane<T>): Promise<void> {
    for (let failures = 0; !this.halting.signal.aborted; ) {
      const room = this.room(lane);
      // An empty queue with no room keeps a receive of one message open, so it sees work arrive.
      const probe = room <= 0 && this.slots.stats(lane.queue).empty && !this.limitFull(lane);
      if (room <= 0 && !probe) {
        await new Promise<void>((resolve) => this.waiting.add(resolve));
        continue;
      }
      let messages: ReceivedMessage<T>[];
      try {
        messages = await this.receive(lane, probe ? 1 : room * lane.batchSize);
        failures = 0;
      } catch (err) {
        // Stopping: the poll was called off (or abandoned), not failed.
        if (this.polling.signal.aborted || this.halting.signal.aborted) break;
        this.report(err, 'receive', lane.queue);
        await sleep(backoffMs({ maxRetries: 0, baseMs: 1000 }, failures++, err), this.halting.signal);
        continue;
      }
      this.received(lane, messages.length);
      // What cannot start now (a limit shrank, another queue took the slots) goes back, no attempt used.
      const startable = this.polling.signal.aborted ? 0 : this.room(lane) * lane.batchSize;
      for (const message of messages.splice(startable)) this.release(lane, message);
      // Past the stop's deadline there is no time left to handle them: hand them back.
      if (this.polling.signal.aborted) for (const message of messages) this.release(lane, message);
      // An ordered queue's per-key batch: the key's messages one after another in one slot.
      else if (!lane.options.batchHandler) for (const group of byKey(messages)) this.run(lane, group);
      else
        for (let i = 0; i < messages.length; i += lane.batchSize)
          this.run(lane, messages.slice(i, i + lane.batchSize));
    }
  }

  /** A receive of the lane's queue ended: an empty one gives its share to the other queues. */
  private received(lane: Lane<T>, count: number): void {
    if (!count) this.hook('empty', lane.queue);
    const was = this.slots.stats(lane.queue).empty;
    this.slots.received(lane.queue, count);
    if (was === !count) return;
    // Every queue's share changed.
    for (const { queue } of this.lanes) this.hook('slots', queue, this.slots.stats(queue));
    this.wakeAll();
  }

  /**
   * Handler calls the lane may start now: its room among the Worker's queues (slots.ts), and no
   * more than any dependency it uses allows (none while calls wait for one of them).
   */
  private room(lane: Lane<T>): number {
    let room = this.slots.room(lane.queue);
    for (const limit of lane.limits) room = Math.min(room, limit.limit - this.usersRunning(limit));
    return this.limitFull(lane) ? 0 : room;
  }

  private limitFull(lane: Lane<T>): boolean {
    return lane.limits.some((limit) => limit.waiting > 0 || limit.limit <= this.usersRunning(limit));
  }

  /** Handler calls running of the queues whose handlers use `limit`. */
  private usersRunning(limit: AdaptiveLimit): number {
    let running = 0;
    for (const lane of this.lanes)
      if (lane.limits.includes(limit)) running += this.slots.stats(lane.queue).running;
    return running;
  }

  private limitOf(name: string, queue: string): AdaptiveLimit {
    const limit = this.limits.get(name);
    if (!limit) throw new TypeError(`${queue} uses ${name}, which is not one of the Worker's limits`);
    return limit;
  }

  /** Runs `fn` within a dependency's limit. */
  private call<R>(dependency: string, fn: () => Promise<R>): Promise<R> {
    const limit = this.limits.get(dependency);
    if (!limit)
      return Promise.reject(new TypeError(`no limit named ${dependency}: declare it in the Worker's limits`));
    return limit.run(fn);
  }

  private wakeAll(): void {
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const wake of waiting) wake();
  }

  private async receive(lane: Lane<T>, free: number): Promise<ReceivedMessage<T>[]> {
    // A channel still connecting is waited for a moment: a long poll now would hold the lane for its wait.
    const connection = await this.channel?.ready(CHANNEL_READY_MS, this.halting.signal);
    if (this.channel && connection !== undefined)
      return this.receiveOrWait(lane, free, this.channel, connection);
    lane.pollStartedAt = Date.now();
    const poll = { id: `poll-${crypto.randomUUID()}`, abort: new AbortController() };
    lane.currentPoll = poll;
    try {
      return await this.options.client.receive<T>(
        lane.queue,
        { ...this.receiveRequest(lane, free), wait_seconds: this.waitSeconds, poll_id: poll.id },
        { signal: AbortSignal.any([this.polling.signal, poll.abort.signal]) },
      );
    } finally {
      lane.pollStartedAt = undefined;
      lane.currentPoll = undefined;
    }
  }

  /**
   * With a wake channel: a receive that does not wait and, if it answers nothing, registers the
   * connection; then the wait is on the channel, for the queue's next admission or `waitSeconds`.
   * The admission's wake hands it its messages, leased as a receive would have; a bare wake (the
   * admission had none for it) sends it to receive again. Nothing is leased while it waits, so a
   * stop ends it at once.
   */
  private async receiveOrWait(
    lane: Lane<T>,
    free: number,
    channel: WakeChannel,
    connection: string,
  ): Promise<ReceivedMessage<T>[]> {
    const since = channel.seen(lane.queue);
    const early = this.handed(lane, free, channel);
    if (early.length) return early;
    const messages = await this.options.client.receive<T>(
      lane.queue,
      { ...this.receiveRequest(lane, free), wait_seconds: 0, wake_connection: connection },
      { signal: this.polling.signal },
    );
    if (messages.length) return messages;
    await channel.wait(lane.queue, since, this.waitSeconds * 1000, this.halting.signal);
    return this.handed(lane, free, channel);
  }

  /**
   * What wakes handed the lane, up to `free`: a wake leases what its registering receive asked
   * for, and slots other queues took since are given back, not overrun.
   */
  private handed(lane: Lane<T>, free: number, channel: WakeChannel): ReceivedMessage<T>[] {
    const messages = channel.handed(lane.queue) as ReceivedMessage<T>[];
    for (const message of messages.splice(this.maxMessages(lane, free))) this.release(lane, message);
    return messages;
  }

  /** What a receive of the lane asks for: what it can start, in batches of its handler's size. */
  private maxMessages(lane: Lane<T>, free: number): number {
    return Math.min(free, lane.batchSize === 1 ? 100 : lane.batchSize);
  }

  private receiveRequest(lane: Lane<T>, free: number) {
    const { leaseSeconds, consumerId } = lane.options;
    return {
      max_messages: this.maxMessages(lane, free),
      ...(leaseSeconds !== undefined ? { lease_seconds: leaseSeconds } : {}),
      ...(consumerId !== undefined ? { consumer_id: consumerId } : {}),
    };
  }

  /**
   * An idle worker's stop calls its long polls off rather than waiting them out: the server gives
   * back what a poll leases from then on (no attempt used), and the request is dropped. Only
   * an answer already on its way when the call-off lands is lost, its messages back after their
   * lease. If the call-off fails, the poll is waited out as before.
   */
  private async callOffPoll(lane: Lane<T>): Promise<void> {
    const poll = lane.currentPoll;
    if (!poll) return;
    try {
      await this.options.client.cancelReceive(lane.queue, poll.id, { signal: this.polling.signal });
    } catch (err) {
      this.report(err, 'receive', lane.queue);
      return;
    }
    poll.abort.abort(new Error('the worker stopped: its long poll was called off'));
  }

  /** One handler call: a message, or a batch of them; or a key's messages, one call each in turn. */
  private run(lane: Lane<T>, messages: ReceivedMessage<T>[]): void {
    const jobs = messages.map((message): Job<T> => {
      const lease = new MessageLease(message as ReceivedMessage<unknown>, {
        client: this.options.client,
        queue: lane.queue,
        heartbeat: this.options.heartbeat ?? true,
        onHeartbeatError: (err) => this.report(err, 'heartbeat', lane.queue, message),
      });
      return { lane, message, lease, settled: false, released: false, done: Promise.resolve() };
    });
    for (const job of jobs) this.jobs.add(job);
    this.slots.started(lane.queue);
    const processed = lane.options.batchHandler
      ? this.process(lane, jobs).then(() => undefined)
      : this.inTurn(lane, jobs);
    const done = processed.finally(() => {
      for (const job of jobs) this.jobs.delete(job);
      this.slots.finished(lane.queue);
      this.wakeAll();
    });
    for (const job of jobs) job.done = done;
  }

  /** Answers whether every message of `jobs` was handled and acked. */
  private async process(lane: Lane<T>, jobs: Job<T>[]): Promise<boolean> {
    const started = Date.now();
    const failures = await this.handle(lane, jobs);
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
  private async inTurn(lane: Lane<T>, jobs: Job<T>[]): Promise<void> {
    for (const [i, job] of jobs.entries()) {
      if (!this.halting.signal.aborted && (await this.process(lane, [job]))) continue;
      for (const rest of jobs.slice(i + 1)) {
        rest.settled = true;
        rest.released = true;
        rest.lease.stop();
        this.release(lane, rest.message);
      }
      return;
    }
  }

  /** Runs the handler: what failed, each with its error. */
  private async handle(lane: Lane<T>, jobs: Job<T>[]): Promise<Map<ReceivedMessage<T>, { err: unknown }>> {
    const { handler, batchHandler } = lane.options;
    const messages = jobs.map((job) => job.message);
    const call = <R>(dependency: string, fn: () => Promise<R>) => this.call(dependency, fn);
    try {
      if (handler) {
        const [job] = jobs as [Job<T>];
        await handler(job.message, { signal: job.lease.signal, extend: (s) => job.lease.extend(s), call });
        return new Map();
      }
      const signal = AbortSignal.any(jobs.map((job) => job.lease.signal));
      const failed = (await batchHandler?.(messages, { signal, call })) ?? [];
      return new Map(failed.map((f) => [f.message, { err: f.error }]));
    } catch (err) {
      return new Map(messages.map((m) => [m, { err }]));
    }
  }

  /** The ack of a message whose handler returned, or the nack of one that failed: whether it was acked. */
  private async settle(job: Job<T>, failure: { err: unknown } | undefined, ms: number): Promise<boolean> {
    const { message, lane } = job;
    const { queue } = lane;
    if (!failure) {
      try {
        const status = await lane.acks.ack(message.receipt);
        if (status !== 'acked') this.report(lateAck(status), 'ack', queue, message);
        else this.hook('processed', message, ms, queue);
        return status === 'acked';
      } catch (err) {
        this.report(err, 'ack', queue, message);
        return false;
      }
    }
    this.report(failure.err, 'handler', queue, message);
    // An overloaded dependency is not the message's failure: back for later, no attempt used.
    if (isOverload(failure.err)) {
      const seconds = failure.err instanceof RetryAfterError ? failure.err.seconds : OVERLOAD_RETRY_SECONDS;
      if (await this.giveBack(lane, message, retryAfterSeconds(seconds) ?? OVERLOAD_RETRY_SECONDS))
        this.hook('throttled', message, failure.err, queue);
      return false;
    }
    const retryable = !(failure.err instanceof NonRetryableError);
    const retryAfter =
      failure.err instanceof RetryAfterError ? retryAfterSeconds(failure.err.seconds) : undefined;
    try {
      await this.options.client.nack(queue, message.receipt, {
        retryable,
        error: errorText(failure.err),
        ...(retryAfter !== undefined ? { retry_after_seconds: retryAfter } : {}),
      });
      this.hook('failed', message, failure.err, queue);
    } catch (err) {
      this.report(err, 'nack', queue, message);
    }
    return false;
  }

  private release(lane: Lane<T>, message: ReceivedMessage<T>): void {
    // A released message is ready again at once, unless an abandoned long poll could still
    // take it: the server cannot tell that the poll's caller has gone.
    const retryAfter = Math.max(0, Math.ceil((lane.abandonedPollUntil - Date.now()) / 1000));
    const released = this.giveBack(lane, message, retryAfter).then(() => undefined);
    this.releases.add(released);
    released.finally(() => this.releases.delete(released));
  }

  /** Gives a message back without using an attempt, ready after `seconds`: whether it was. */
  private async giveBack(lane: Lane<T>, message: ReceivedMessage<T>, seconds: number): Promise<boolean> {
    try {
      await this.options.client.nack(lane.queue, message.receipt, {
        retry_after_seconds: seconds,
        release: true,
      });
      return true;
    } catch (err) {
      if (!(err instanceof StaleReceiptError)) this.report(err, 'release', lane.queue, message);
      return false;
    }
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    this.halting.abort();
    this.wakeAll();
    if (this.slots.running === 0) await Promise.all(this.lanes.map((lane) => this.callOffPoll(lane)));
    const loops = () => Promise.all(this.lanes.map((lane) => lane.loop));
    const deadline = new AbortController();
    const drained = (async () => {
      await loops();
      await Promise.all([...this.jobs].map((job) => job.done));
    })();
    await Promise.race([drained, sleep(timeoutMs, deadline.signal)]);
    deadline.abort();

    for (const lane of this.lanes)
      if (lane.pollStartedAt !== undefined)
        lane.abandonedPollUntil = lane.pollStartedAt + this.waitSeconds * 1000;
    this.polling.abort(new Error('the worker stopped'));
    await loops();
    const settling: Promise<void>[] = [];
    for (const job of this.jobs) {
      // A job whose handler already returned only has its ack left: let it finish.
      if (job.settled) {
        settling.push(job.done);
        continue;
      }
      job.released = true;
      job.lease.abort(new Error('the worker stopped before the handler finished'));
      this.release(job.lane, job.message);
    }
    // Closed first: an admission's wake after this finds the connection gone and gives back what
    // it leased; what wakes handed before it is given back here.
    this.channel?.close();
    for (const lane of this.lanes)
      for (const message of this.channel?.handed(lane.queue) ?? [])
        this.release(lane, message as ReceivedMessage<T>);
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

  private report(err: unknown, phase: WorkerPhase, queue: string, message?: ReceivedMessage<T>): void {
    const { onError } = this.options;
    if (!onError) {
      console.error(`leaseq worker (${queue}) ${phase}${message ? ` ${message.message_id}` : ''}:`, err);
      return;
    }
    try {
      onError(err, message ? { phase, queue, message } : { phase, queue });
    } catch {
      // A failing onError must not stop the loop; there is nobody left to tell.
    }
  }
}

/** The queues a Worker's options name: `queues`, or the one `queue` with the top-level handler. */
function lanesOf<T>(options: WorkerOptions<T>): Record<string, QueueOptions<T>> {
  if ((options.queue === undefined) === (options.queues === undefined))
    throw new TypeError('a Worker takes a queue or queues: one of them');
  if (options.queues) {
    if (options.handler || options.batchHandler)
      throw new TypeError("a Worker of several queues takes each queue's handler in `queues`");
    if (!Object.keys(options.queues).length) throw new TypeError('a Worker takes at least one queue');
    return options.queues;
  }
  const { handler, batchHandler, batchSize, leaseSeconds, consumerId } = options;
  return {
    [options.queue as string]: {
      ...(handler ? { handler } : {}),
      ...(batchHandler ? { batchHandler } : {}),
      ...(batchSize !== undefined ? { batchSize } : {}),
      ...(leaseSeconds !== undefined ? { leaseSeconds } : {}),
      ...(consumerId !== undefined ? { consumerId } : {}),
    },
  };
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
