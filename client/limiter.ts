import { RetryAfterError } from './errors.js';

/**
 * An adaptive concurrency limit for one dependency a handler calls (a database, a payments API):
 * how many calls may run at once, learned from the calls' latency and throttling answers, so a
 * Worker sends a dependency what it sustains instead of what the queue's backlog would make it
 * send (docs/worker.md, "Protect your dependencies").
 *
 * The algorithm is TCP Vegas's, as Netflix's concurrency-limits applies it to calls, over rounds:
 * - A round ends once as many calls as the limit, started since its last change, have finished
 *   (at least MIN_ROUND): calls started under another limit tell nothing of this one.
 * - The baseline is the fastest call of the last BASELINE_ROUNDS rounds: the latency of a call
 *   that did not queue. It follows a dependency that became slower for good within those rounds.
 * - From the round's mean call, limit × (1 − baseline/mean) estimates the calls that queued at
 *   the dependency instead of running. More than `queueing` of them: the limit falls by one;
 *   fewer than a third of it, and the round used the whole limit: it grows by one (doubling
 *   while in slow start, until the first fall). In between it holds: the dependency is busy and
 *   not yet queueing, where its throughput is highest.
 * - A round more than FAR_TOO_SLOW × the baseline shrinks it in proportion (by half at most), so
 *   a limit far too high falls in a few rounds, not one call a round.
 * - A throttling answer (429, 503, RetryAfterError) shrinks it by OVERLOAD_FACTOR at once, and
 *   starts a new round.
 * It starts from `initial`: the last limit a Worker learned (stats()), so a restart does not begin
 * again from the floor (or, without it, from the ceiling, shrinking to what the dependency takes).
 */

export interface LimitOptions {
  /** The limit it starts from; default `max`. Pass the last one `stats()` showed to resume. */
  initial?: number;
  /** The floor; default 1. */
  min?: number;
  /** The ceiling; default 64. */
  max?: number;
  /** Calls it lets queue at the dependency before it takes the limit down; default 3. */
  queueing?: number;
}

export interface LimitStats {
  /** Calls allowed at once now. */
  limit: number;
  /** Calls running now. */
  in_flight: number;
  /** Calls waiting for a slot now. */
  waiting: number;
  /** The fastest call of the recent rounds, ms. */
  baseline_ms: number | undefined;
  /** The mean call of the last round, ms. */
  latency_ms: number | undefined;
  /** Times the limit shrank: for queueing, and for throttling. */
  drops: { latency: number; overload: number };
}

/** Rounds the baseline remembers its fastest call over. */
const BASELINE_ROUNDS = 30;
/** Calls a round takes at least, so one call's luck does not move the limit. */
const MIN_ROUND = 4;
/** A round this many times slower than the baseline was far too many calls at once. */
const FAR_TOO_SLOW = 2;
/** What such a round leaves of the limit at least. */
const MAX_SHRINK = 0.5;
/** What a throttling answer leaves of the limit. */
const OVERLOAD_FACTOR = 0.7;

export class AdaptiveLimit {
  private current: number;
  private readonly min: number;
  private readonly max: number;
  private readonly queueing: number;
  private slowStart = true;
  /** Counts the limit's changes: a round takes only calls started since the last one. */
  private epoch = 0;
  private inFlight = 0;
  private readonly queue: (() => void)[] = [];
  /** This round: its calls' latencies, and the most calls at once. */
  private round: number[] = [];
  private busiest = 0;
  /** The fastest call of each recent round, and the fastest of them all. */
  private readonly fastest: number[] = [];
  private baseline: number | undefined;
  private mean: number | undefined;
  private readonly drops = { latency: 0, overload: 0 };
  private readonly listeners = new Set<(stats: LimitStats) => void>();

  constructor(
    options: LimitOptions = {},
    private readonly now: () => number = () => performance.now(),
  ) {
    this.min = Math.max(1, Math.floor(options.min ?? 1));
    this.max = Math.max(this.min, Math.floor(options.max ?? 64));
    this.queueing = Math.max(1, options.queueing ?? 3);
    this.current = clamp(options.initial ?? this.max, this.min, this.max);
  }

  /** Calls allowed at once now (whole). */
  get limit(): number {
    return Math.max(this.min, Math.floor(this.current));
  }

  /** Slots free now: calls that would start without waiting. */
  get free(): number {
    return Math.max(0, this.limit - this.inFlight - this.queue.length);
  }

  /** Calls waiting for a slot now. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Runs `fn` once a slot is free, and learns from how long it took and how it ended. */
  async run<R>(fn: () => Promise<R>): Promise<R> {
    await this.acquire();
    const started = this.now();
    const epoch = this.epoch;
    let overloaded = false;
    try {
      return await fn();
    } catch (err) {
      overloaded = isOverload(err);
      throw err;
    } finally {
      this.inFlight--;
      // A call started under an earlier limit tells nothing of this one.
      if (epoch === this.epoch) this.sample(this.now() - started, overloaded);
      this.next();
    }
  }

  /** Called with the stats whenever the limit changes. */
  onChange(listener: (stats: LimitStats) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stats(): LimitStats {
    return {
      limit: this.limit,
      in_flight: this.inFlight,
      waiting: this.queue.length,
      baseline_ms: this.baseline,
      latency_ms: this.mean,
      drops: { ...this.drops },
    };
  }

  private acquire(): Promise<void> {
    if (this.inFlight < this.limit && !this.queue.length) {
      this.inFlight++;
      this.busiest = Math.max(this.busiest, this.inFlight);
      return Promise.resolve();
    }
    return new Promise((resolve) => this.queue.push(resolve));
  }

  /** Starts waiting calls while the limit has room. */
  private next(): void {
    while (this.queue.length && this.inFlight < this.limit) {
      this.inFlight++;
      this.busiest = Math.max(this.busiest, this.inFlight);
      this.queue.shift()?.();
    }
  }

  private sample(ms: number, overloaded: boolean): void {
    // Throttling is the dependency's own word: the limit falls at once, not at the round's end.
    if (overloaded) {
      const before = this.limit;
      this.current = Math.max(this.min, this.current * OVERLOAD_FACTOR);
      this.slowStart = false;
      this.drops.overload++;
      this.endRound(before);
      return;
    }
    this.round.push(ms);
    if (this.round.length < Math.max(MIN_ROUND, this.limit)) return;
    const mean = this.round.reduce((a, b) => a + b, 0) / this.round.length;
    this.fastest.push(Math.min(...this.round));
    if (this.fastest.length > BASELINE_ROUNDS) this.fastest.shift();
    this.baseline = Math.min(...this.fastest);
    const ratio = mean / this.baseline;
    // Vegas's estimate of the calls that queued at the dependency rather than ran.
    const queued = this.current * (1 - 1 / ratio);
    const used = this.busiest >= this.limit || this.queue.length > 0;
    const before = this.limit;
    if (ratio > FAR_TOO_SLOW) {
      this.current = Math.max(this.min, this.current * Math.max(MAX_SHRINK, FAR_TOO_SLOW / 2 / ratio));
      this.slowStart = false;
      this.drops.latency++;
    } else if (queued > this.queueing) {
      this.current = Math.max(this.min, this.current - 1);
      this.slowStart = false;
      this.drops.latency++;
    } else if (used && queued < this.queueing / 3)
      this.current = Math.min(this.max, this.slowStart ? this.current * 2 : this.current + 1);
    this.mean = mean;
    this.endRound(before);
  }

  /** A new round; when the limit changed from `before`, a new epoch, and listeners told. */
  private endRound(before: number): void {
    this.round = [];
    this.busiest = this.inFlight;
    if (this.limit === before) return;
    this.epoch++;
    this.next();
    const stats = this.stats();
    for (const listener of this.listeners) listener(stats);
  }
}

/**
 * Whether an error is the dependency saying it is overloaded: a RetryAfterError, an HTTP 429 or
 * 503 (by `status`, `statusCode` or the AWS SDK's `$metadata`), or an AWS throttling error's name.
 */
export function isOverload(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as {
    name?: unknown;
    status?: unknown;
    statusCode?: unknown;
    $metadata?: { httpStatusCode?: unknown };
  };
  if (err instanceof RetryAfterError) return true;
  const status = e.status ?? e.statusCode ?? e.$metadata?.httpStatusCode;
  if (status === 429 || status === 503) return true;
  return (
    typeof e.name === 'string' &&
    /Throttl|TooManyRequests|SlowDown|ThroughputExceeded|RequestLimitExceeded/.test(e.name)
  );
}

function clamp(n: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, n));
}
