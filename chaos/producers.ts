import { setTimeout as sleep } from 'node:timers/promises';
import { LeaseqApiError, type LeaseqClient, type ProduceMessage } from '../client/index.js';
import type { ChaosPayload, History } from './history.js';
import type { Random } from './random.js';

/**
 * A producer of one queue: new messages at a rate, each with an explicit id, and every
 * message not yet answered `accepted` or `duplicate` sent again with the same id (after an
 * error, a kill, or a per-message `failed`), as a service retrying safely would.
 *
 * On an ordered queue a key's next message is sent only once the previous one is known to be
 * in the log, so each key's produce order is its `seq` order, which the order check relies on.
 */

export interface ProducerOptions {
  client: LeaseqClient;
  history: History;
  random: Random;
  queue: string;
  /** Messages per second, on average. */
  ratePerSecond: number;
  /** Ordered queues: how many keys the messages spread over. */
  keys?: number;
  /**
   * Ordered queues: the first key is a hot one, in every batch it can be in (its previous message
   * must be in the log first), so it has a backlog of its own.
   */
  hotKey?: boolean;
  /** Prefix of the message ids, unique per producer. */
  name: string;
}

const TICK_MS = 250;
/** Well under the 500-message limit, so a long outage's backlog still goes in one request. */
const MAX_BATCH = 400;

export class Producer {
  /** Sent and not yet known to be in the log, by id. */
  private readonly pending = new Map<string, ProduceMessage<ChaosPayload>>();
  private readonly nextSeq = new Map<string, number>();
  private made = 0;
  private freshAt = 0;
  private producing = true;
  private deadline = Number.POSITIVE_INFINITY;
  private loop: Promise<void> | undefined;

  constructor(private readonly o: ProducerOptions) {}

  start(): void {
    this.freshAt = Date.now();
    this.loop = this.run();
  }

  /**
   * Makes no new messages and keeps retrying the pending ones for up to `timeoutMs`; answers the
   * ids still without an `accepted` or `duplicate` (their fate is unknown: they are not checked).
   */
  async finish(timeoutMs: number): Promise<string[]> {
    this.producing = false;
    this.deadline = Date.now() + timeoutMs;
    await this.loop;
    return [...this.pending.keys()];
  }

  private async run(): Promise<void> {
    while ((this.producing || this.pending.size > 0) && Date.now() < this.deadline) {
      // New messages only as far as the batch has room, so pending ones never exceed it.
      const room = MAX_BATCH - this.pending.size;
      const batch = [...this.pending.values(), ...(this.producing && room > 0 ? this.fresh(room) : [])];
      const pause = batch.length ? await this.send(batch) : 0;
      await sleep(Math.max(TICK_MS, pause));
    }
  }

  /**
   * New messages for the time since the last ones, in uneven batches: `ratePerSecond` on average
   * however long the requests take, so a slow or failing runtime faces the same load.
   */
  private fresh(max: number): ProduceMessage<ChaosPayload>[] {
    const now = Date.now();
    const mean = (this.o.ratePerSecond * (now - this.freshAt)) / 1000;
    this.freshAt = now;
    const count = Math.min(max, this.o.random.int(0, Math.round(2 * mean)));
    if (this.o.keys === undefined) {
      return Array.from({ length: count }, () => {
        const id = `${this.o.name}-${this.made++}`;
        return { message_id: id, payload: { id } };
      });
    }
    // Only keys whose previous message is in the log; each key at most once per batch.
    const busy = new Set([...this.pending.values()].map((m) => m.key));
    const free = Array.from({ length: this.o.keys }, (_, i) => `${this.o.name}-k${i}`).filter(
      (k) => !busy.has(k),
    );
    const chosen: string[] = [];
    const hot = `${this.o.name}-k0`;
    if (this.o.hotKey && count > 0 && free.includes(hot))
      chosen.push(free.splice(free.indexOf(hot), 1)[0] as string);
    while (chosen.length < count && free.length) {
      chosen.push(free.splice(this.o.random.int(0, free.length - 1), 1)[0] as string);
    }
    return chosen.map((key) => {
      const seq = this.nextSeq.get(key) ?? 0;
      this.nextSeq.set(key, seq + 1);
      const id = `${key}-${seq}`;
      return { message_id: id, key, payload: { id, key, seq } };
    });
  }

  /** One request; answers how long to wait before the next (a 503's Retry-After). */
  private async send(batch: ProduceMessage<ChaosPayload>[]): Promise<number> {
    for (const m of batch) {
      this.o.history.sent(this.o.queue, m.payload);
      this.pending.set(m.payload.id, m);
    }
    try {
      const results = await this.o.client.produce(this.o.queue, batch);
      this.o.history.answered('produce', 200);
      for (const r of results) if (this.o.history.produceResult(r)) this.pending.delete(r.message_id);
      return 0;
    } catch (err) {
      this.o.history.failed('produce', err);
      return err instanceof LeaseqApiError ? (err.retryAfterSeconds ?? 0) * 1000 : 0;
    }
  }
}
