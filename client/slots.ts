/**
 * How a Worker that serves several queues divides its handler slots (its `concurrency`) among
 * them: by weight, over running work rather than fetch odds, so a queue whose handlers are slow
 * holds no more slots than its share while the others have work (Sidekiq's weights set fetch
 * odds, and a slow queue there starves the rest).
 *
 * - A queue's share is `concurrency × weight / Σ weights` of the queues that have work, within its
 *   `min` and `max`. A queue has work until a receive of it comes back empty, and again once one
 *   brings messages.
 * - A queue may start handlers while it runs fewer than its `max` and there are free slots the
 *   other queues with work are not owed: the part of their share they do not run yet. So an
 *   empty queue costs no slots, and its share goes to the others; once it has work again, slots
 *   that free up are owed to it first (running handlers are never cut short).
 * - A queue that may start nothing still keeps one receive of a single message open while it is
 *   empty, so work that arrives is seen; a message that cannot start then goes back at once
 *   without using an attempt, and the queue's share is owed to it from then on.
 */

export interface SlotOptions {
  /** Its part of the slots beside the other queues'; default 1. */
  weight?: number;
  /** Slots it keeps while it has work, whatever the weights; default 0. */
  min?: number;
  /** Slots it runs at most; default the Worker's concurrency. */
  max?: number;
}

export interface QueueSlots {
  weight: number;
  min: number;
  max: number;
  /** Handler calls of the queue running now. */
  running: number;
  /** Slots it is owed now: its share among the queues with work (0 while it is empty). */
  share: number;
  /** Its last receive came back empty: it costs no slots until one brings messages. */
  empty: boolean;
}

interface Entry {
  weight: number;
  min: number;
  max: number;
  running: number;
  empty: boolean;
}

export class SlotShare {
  private readonly queues = new Map<string, Entry>();

  constructor(readonly concurrency: number) {}

  add(queue: string, options: SlotOptions = {}): void {
    const weight = options.weight ?? 1;
    if (!(weight > 0)) throw new TypeError(`the weight of ${queue} must be above 0`);
    const max = Math.min(this.concurrency, Math.max(1, Math.floor(options.max ?? this.concurrency)));
    const min = Math.min(max, Math.max(0, Math.floor(options.min ?? 0)));
    const mins = [...this.queues.values()].reduce((sum, q) => sum + q.min, min);
    if (mins > this.concurrency)
      throw new TypeError(
        `the queues' min slots add up to ${mins}, past the concurrency ${this.concurrency}`,
      );
    this.queues.set(queue, { weight, min, max, running: 0, empty: false });
  }

  /** Slots all queues run now. */
  get running(): number {
    let running = 0;
    for (const q of this.queues.values()) running += q.running;
    return running;
  }

  /** Handler calls `queue` may start now. */
  room(queue: string): number {
    const q = this.entry(queue);
    let owed = 0;
    for (const [name, other] of this.queues)
      if (name !== queue) owed += Math.max(0, this.share(name) - other.running);
    return Math.max(0, Math.min(q.max - q.running, this.concurrency - this.running - owed));
  }

  /** A receive of `queue` ended with `count` messages: none marks it empty, any marks it busy. */
  received(queue: string, count: number): void {
    this.entry(queue).empty = count === 0;
  }

  started(queue: string): void {
    this.entry(queue).running++;
  }

  finished(queue: string): void {
    this.entry(queue).running--;
  }

  /**
   * Slots `queue` is owed: its part of the concurrency among the queues with work. The mins come
   * off the top and the rest is divided by weight, each part rounded down and what rounding leaves
   * given to the largest remainders, so the shares add up to the concurrency; then each is capped
   * at its queue's `max`.
   */
  share(queue: string): number {
    const q = this.entry(queue);
    if (q.empty) return 0;
    const busy = [...this.queues].filter(([, other]) => !other.empty);
    const weights = busy.reduce((sum, [, other]) => sum + other.weight, 0);
    const rest = this.concurrency - busy.reduce((sum, [, other]) => sum + other.min, 0);
    const exact = busy.map(([name, other]) => ({ name, part: (rest * other.weight) / weights }));
    const left = rest - exact.reduce((sum, { part }) => sum + Math.floor(part), 0);
    const rounded = [...exact].sort((x, y) => (y.part % 1) - (x.part % 1)).slice(0, left);
    const part = exact.find(({ name }) => name === queue)?.part ?? 0;
    const extra = rounded.some(({ name }) => name === queue) ? 1 : 0;
    return Math.min(q.max, q.min + Math.floor(part) + extra);
  }

  stats(queue: string): QueueSlots {
    const { weight, min, max, running, empty } = this.entry(queue);
    return { weight, min, max, running, share: this.share(queue), empty };
  }

  private entry(queue: string): Entry {
    const q = this.queues.get(queue);
    if (!q) throw new TypeError(`no queue named ${queue} in this Worker`);
    return q;
  }
}
