import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import type { ClaimStore } from '../claims/claims.js';
import { mapLimit } from '../core/async.js';
import { type Envelope, payloadBytes } from '../core/envelope.js';
import { entryStatus, type Lease, type Range } from '../core/ranges.js';
import type { CounterName } from '../observability/metrics.js';
import type { NewLease, RangeStore } from '../store/ranges.js';
import type { SegmentStore } from '../store/segments.js';
import { handlerFailure, type MessageHandler, messageOf } from './records.js';

/**
 * What one invocation of a Lambda consumer on the lease layer holds while it runs a batch: its
 * lease (until its own deadline), the entries it leased range by range, what it handled, what it
 * must leave to the event source's retry, and its counts. The delivery rules (in which order, for
 * which key) are the caller's; here is how an entry is leased, handed over, acked or given back.
 */

/** A record of the batch at its entry in the namespace's ranges. */
export interface Located {
  sequence: string;
  envelope: Envelope;
  range: Range;
  index: number;
}

export interface InvocationDeps {
  namespace: string;
  ranges: RangeStore;
  segments: SegmentStore;
  claims: ClaimStore;
  logger: Logger;
  // biome-ignore lint/suspicious/noExplicitAny: the payload type is the user's; the envelope carries unknown.
  handler: MessageHandler<any>;
  timeoutMarginMs: number;
}

/** How a handler's throw was recorded; undefined when the lease was no longer this delivery's. */
export type FailureHook = (
  failure: ReturnType<typeof handlerFailure>,
) => Promise<{ kind: 'retry' | 'dead' } | undefined>;

/** One range's entries as this invocation leases, runs and acks them. */
class RangeRun {
  private leasing?: Promise<ReadonlySet<number>>;
  /** Taken over from an invocation that crashed: this invocation's already. */
  private readonly owned = new Set<number>();
  private readonly done: number[] = [];
  private outstanding: number;
  /** Handed to the handler (or finished here): never given back, whatever happens after. */
  readonly started = new Set<number>();

  constructor(
    readonly range: Range,
    readonly indexes: readonly number[],
  ) {
    this.outstanding = indexes.length;
  }

  own(indexes: readonly number[]): void {
    for (const i of indexes) this.owned.add(i);
  }

  /** The indexes this invocation holds, the free ones leased on first need with one write for all. */
  held(lease: (range: Range, indexes: readonly number[]) => Promise<ReadonlySet<number>>) {
    this.leasing ??= (async () => {
      const free = this.indexes.filter((i) => !this.owned.has(i));
      const won = free.length ? await lease(this.range, free) : new Set<number>();
      return new Set([...won, ...this.owned]);
    })();
    return this.leasing;
  }

  /** Marks one entry settled; answers the entries to ack once none is outstanding. */
  settle(index: number, handled: boolean): number[] | undefined {
    if (handled) this.done.push(index);
    this.outstanding--;
    return this.outstanding === 0 ? this.rest() : undefined;
  }

  /** Handled entries not acked yet (the run stopped before its last entry). */
  rest(): number[] {
    return this.done.splice(0);
  }
}

export class Invocation {
  readonly lease: NewLease;
  readonly counts: Partial<Record<CounterName, number>> = {};
  /** Each handler call's run time, returned or thrown, in seconds. */
  readonly handlerSeconds: number[] = [];
  /** Records left to the event source's retry. */
  readonly unfinished: Located[] = [];
  /** An AWS call failed after its retries: nothing more is started. */
  halted = false;
  private readonly runs = new Map<string, RangeRun>();

  constructor(
    private readonly deps: InvocationDeps,
    readonly context: Context,
    consumer: string,
    private readonly todo: readonly Located[],
  ) {
    const now = Date.now();
    this.lease = {
      deliveredAt: now,
      // The invocation's own end: past it, the sweep counts a failed attempt.
      expiresAt: now + context.getRemainingTimeInMillis(),
      consumerId: `${consumer}/${context.awsRequestId}`,
    };
    const byRange = new Map<string, Located[]>();
    for (const l of todo) byRange.set(l.range.start, [...(byRange.get(l.range.start) ?? []), l]);
    for (const [start, ls] of byRange)
      this.runs.set(
        start,
        new RangeRun(
          ls[0]?.range as Range,
          ls.map((l) => l.index),
        ),
      );
  }

  /**
   * Takes over the entries an earlier invocation left leased (it crashed or timed out): one write
   * per range. Answers each taken entry's takeover count; an entry lost to a race is left out (and
   * to the event source's retry).
   */
  async takeOver(left: readonly Located[]): Promise<Map<Located, number>> {
    const byRange = new Map<string, Located[]>();
    for (const l of left) byRange.set(l.range.start, [...(byRange.get(l.range.start) ?? []), l]);
    const taken = new Map<Located, number>();
    const { ranges, namespace } = this.deps;
    await mapLimit([...byRange.values()], 8, async (ls) => {
      let range = (ls[0] as Located).range;
      let mine = ls;
      if (
        !(await ranges.takeOver(
          namespace,
          range,
          mine.map((l) => l.index),
          this.lease,
        ))
      ) {
        // One of them finished meanwhile (the sweep expired it): once more with what is still leased.
        const fresh = await ranges.get(namespace, range.shard, range.start);
        if (!fresh) return;
        range = fresh;
        mine = ls.filter((l) => ['leased', 'expired'].includes(entryStatus(fresh, l.index, Date.now())));
        if (
          !mine.length ||
          !(await ranges.takeOver(
            namespace,
            range,
            mine.map((l) => l.index),
            this.lease,
          ))
        )
          return;
      }
      this.runs.get(range.start)?.own(mine.map((l) => l.index));
      for (const l of mine) taken.set(l, (range.leases.get(l.index)?.takeovers ?? 0) + 1);
    });
    return taken;
  }

  /** Payload bytes of the messages this invocation acked: freed from the queue's storage for its consumer. */
  freedBytes = 0;
  private readonly bytes = new WeakMap<Envelope, number>();

  count(name: CounterName, n = 1): void {
    if (n) this.counts[name] = (this.counts[name] ?? 0) + n;
  }

  /** Whether another record may start: not after an AWS failure, nor within the timeout margin. */
  mayStart(): boolean {
    return !this.halted && this.context.getRemainingTimeInMillis() >= this.deps.timeoutMarginMs;
  }

  /** This invocation's lease as a range reports it. */
  leaseView(): Lease {
    const { expiresAt, deliveredAt, consumerId } = this.lease;
    return { expiresAt, deliveredAt, ...(consumerId !== undefined ? { consumerId } : {}) };
  }

  /**
   * Runs `work` on a leased entry, or leaves the record to the retry (not started: the margin,
   * an earlier AWS failure, or another invocation's lease). An AWS failure in `work` halts the
   * invocation and leaves the record too. `work` answers whether the entry is to be acked; `run`
   * answers false when the record was left to the retry.
   */
  async run(l: Located, work: () => Promise<boolean>): Promise<boolean> {
    const leave = () => {
      this.unfinished.push(l);
      return false;
    };
    if (!this.mayStart()) return leave();
    const run = this.runs.get(l.range.start) as RangeRun;
    try {
      const held = await run.held((range, indexes) => this.leaseRange(range, indexes));
      // Another invocation's (the event source's retry never overlaps one): left to the event source.
      if (!held.has(l.index)) return leave();
      run.started.add(l.index);
      const toAck = run.settle(l.index, await work());
      if (toAck?.length) await this.ackRun(run, toAck);
      return true;
    } catch (err) {
      this.halted = true;
      this.deps.logger.error('AWS call failed: the event source retries from this record', {
        sequenceNumber: l.sequence,
        error: (err as Error).message,
      });
      return leave();
    }
  }

  /**
   * Hands a message to the handler; true when it returned. A throw goes to `onFailure`. Reading the
   * payload is outside the handler's try: a failed read is the infrastructure's, not the message's.
   */
  async deliver(envelope: Envelope, onFailure: FailureHook): Promise<boolean> {
    const { deps } = this;
    const resolved = await this.resolve(envelope);
    this.bytes.set(envelope, payloadBytes(resolved));
    const message = messageOf(resolved, await deps.claims.payloadOf(resolved), resolved.attempt);
    this.count('received');
    if (resolved.attempt > 1) this.count('redelivered');
    const started = Date.now();
    try {
      await deps.handler(message, this.context);
      this.handlerSeconds.push((Date.now() - started) / 1000);
      return true;
    } catch (err) {
      this.handlerSeconds.push((Date.now() - started) / 1000);
      const failure = handlerFailure(err);
      const outcome = await onFailure(failure);
      if (outcome) this.count('nacked');
      if (outcome?.kind === 'dead') this.count('dead_lettered');
      deps.logger.warn('the handler failed', {
        message_id: resolved.message_id,
        attempt: resolved.attempt,
        ...failure,
        outcome: outcome?.kind ?? 'stale',
      });
      return false;
    }
  }

  /** The envelope with its payload: a retry's entry points at its first entry's. */
  async resolve(envelope: Envelope): Promise<Envelope> {
    const resolved = await this.deps.segments.resolve(this.deps.namespace, envelope);
    if (!resolved) throw new Error(`the payload of ${envelope.message_id} is gone from its segment`);
    return resolved;
  }

  /** Acks one entry now, not with its range's others (it must be acked before what follows it). */
  async ackOne(l: Located): Promise<void> {
    const { done, mine } = await this.ack(l.range, [l.index]);
    if (!done.length) throw new Error(`the lease of ${l.envelope.message_id} ended`);
    this.count('acked');
    if (mine.length) this.freed(l.envelope);
  }

  /** A delivered message acked outside its range run (a key's hold area): counted and its bytes freed. */
  ackedElsewhere(envelope: Envelope): void {
    this.count('acked');
    this.freed(envelope);
  }

  private freed(envelope: Envelope): void {
    this.freedBytes += this.bytes.get(envelope) ?? 0;
  }

  /** The end of the batch: what was handled and not acked yet is acked; what never started, given back. */
  async finish(): Promise<void> {
    await mapLimit([...this.runs.values()], 8, async (run) => {
      const rest = run.rest();
      if (rest.length) await this.ackRun(run, rest);
    });
    await this.giveBack();
  }

  /**
   * Acks a run's handled entries. What could not be acked is left to the event source's retry, which
   * takes it over: a handled message left leased and unreported would keep its shard's window open.
   */
  private async ackRun(run: RangeRun, indexes: number[]): Promise<void> {
    let acked: number[] = [];
    try {
      const { done, mine } = await this.ack(run.range, indexes);
      acked = done;
      for (const l of this.todo)
        if (l.range.start === run.range.start && mine.includes(l.index)) this.freed(l.envelope);
    } catch (err) {
      this.halted = true;
      this.deps.logger.warn('could not ack handled messages: the event source retries them', {
        error: (err as Error).message,
      });
    }
    this.count('acked', acked.length);
    const left = indexes.filter((i) => !acked.includes(i));
    for (const l of this.todo)
      if (l.range.start === run.range.start && left.includes(l.index) && !this.unfinished.includes(l))
        this.unfinished.push(l);
  }

  /** Leases a run's entries in one write; after a lost race, what a fresh read shows free. */
  private async leaseRange(range: Range, indexes: readonly number[]): Promise<ReadonlySet<number>> {
    const { ranges, namespace } = this.deps;
    if (await ranges.lease(namespace, range, indexes, this.lease)) return new Set(indexes);
    const fresh = await ranges.get(namespace, range.shard, range.start);
    const free = fresh ? indexes.filter((i) => entryStatus(fresh, i, this.lease.deliveredAt) === 'free') : [];
    return free.length && (await ranges.lease(namespace, range, free, this.lease))
      ? new Set(free)
      : new Set();
  }

  /**
   * One write for a run's handled entries; entry by entry when one of them is no longer ours.
   * Answers those that are done with (acked here, or finished by another meanwhile), and those
   * acked here.
   */
  private async ack(range: Range, indexes: number[]): Promise<{ done: number[]; mine: number[] }> {
    const { ranges, namespace } = this.deps;
    if (await ranges.ack(namespace, range, indexes, Date.now())) return { done: indexes, mine: indexes };
    const one = await mapLimit(indexes, 8, (i) => ranges.ack(namespace, range, [i], Date.now()));
    const mine = indexes.filter((_, k) => one[k]);
    const stale = indexes.filter((_, k) => !one[k]);
    if (!stale.length) return { done: indexes, mine };
    // Finished by someone else meanwhile (a takeover's ack, or the sweep's expiry): nothing left to do.
    const fresh = await ranges.get(namespace, range.shard, range.start);
    const finished = stale.filter((i) => !fresh || fresh.acked.has(i) || fresh.failed.has(i));
    const lost = stale.filter((i) => !finished.includes(i));
    if (lost.length)
      this.deps.logger.warn('the lease ended before the ack: those messages will be delivered again', {
        range: range.start,
        entries: lost,
      });
    return { done: indexes.filter((i) => !lost.includes(i)), mine };
  }

  /** Leases written but never started go back, so the retry takes no attempt for them. */
  private async giveBack(): Promise<void> {
    const byRange = new Map<string, number[]>();
    for (const l of this.unfinished)
      byRange.set(l.range.start, [...(byRange.get(l.range.start) ?? []), l.index]);
    await mapLimit([...byRange], 8, async ([start, indexes]) => {
      const run = this.runs.get(start);
      if (!run) return;
      const held = await run.held(async () => new Set());
      const mine = indexes.filter((i) => held.has(i) && !run.started.has(i));
      if (!mine.length) return;
      try {
        await this.deps.ranges.release(this.deps.namespace, run.range, mine, this.lease);
      } catch (err) {
        // Left leased, the retry counts them as attempts: more redelivery, never a lost message.
        this.deps.logger.warn('could not give back unstarted leases', { error: (err as Error).message });
      }
    });
  }
}
