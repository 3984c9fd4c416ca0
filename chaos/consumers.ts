import { setTimeout as sleep } from 'node:timers/promises';
import {
  LeaseqApiError,
  type LeaseqClient,
  type ReceivedMessage,
  StaleReceiptError,
} from '../client/index.js';
import { groupBy } from './checks.js';
import type { Delivery, History, SettleOutcome } from './history.js';
import type { Random } from './random.js';

/**
 * A pull consumer of one queue: long-polls, records each delivery, and settles it the way a
 * fleet of real workers would, mostly acking, sometimes failing, sometimes too slow or gone.
 * Every request goes once: an error is recorded and the outcome left unknown, since after a
 * kill nobody can tell whether it took effect. Draining, it acks everything at once.
 */

export interface ConsumerBehaviour {
  /** Share of deliveries nacked, so retried after the queue's backoff. */
  nack: number;
  /** Share nacked as not retryable: dead-lettered at once. */
  deadLetter: number;
  /** Share acked only after the lease ran out: by then the receipt must be refused. */
  slowAck: number;
  /** Share never settled: the lease expires and the sweep retries it. */
  drop: number;
}

export interface ConsumerOptions {
  client: LeaseqClient;
  history: History;
  random: Random;
  queue: string;
  name: string;
  behaviour: ConsumerBehaviour;
  leaseSeconds: number;
}

const IDLE_BACKOFF_MS = 250;

export class Consumer {
  private draining = false;
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly o: ConsumerOptions) {}

  start(): void {
    this.loop = this.run();
  }

  drain(): void {
    this.draining = true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  private async run(): Promise<void> {
    const { client, history, queue, name } = this.o;
    while (!this.stopped) {
      let got: ReceivedMessage[];
      try {
        got = await client.receive(queue, { max_messages: 10, wait_seconds: 1, consumer_id: name });
        history.answered('receive', 200);
      } catch (err) {
        history.failed('receive', err);
        await sleep(Math.max(IDLE_BACKOFF_MS, retryAfterMs(err)));
        continue;
      }
      const receivedAt = Date.now();
      const deliveries = got.map((m) => history.delivered(queue, name, m, receivedAt));
      // A key's messages of one answer (an ordered queue's per-key batch) in turn, as the Worker
      // runs them: one that is not acked in time ends its key's turn, the rest come back.
      await Promise.all(
        [...groupBy(deliveries, (d) => d.key ?? d.id)].map(async ([, turn]) => {
          for (const d of turn) if (!(await this.handle(d))) return;
        }),
      );
    }
  }

  /** Answers whether it was acked in time (the key's next message may go). */
  private async handle(d: Delivery): Promise<boolean> {
    if (this.draining) return this.ack(d);
    const { nack, deadLetter, slowAck, drop } = this.o.behaviour;
    const roll = this.o.random.next();
    if (roll < nack) return this.nack(d, true);
    if (roll < nack + deadLetter) return this.nack(d, false);
    if (roll < nack + deadLetter + slowAck) {
      await sleep(this.o.leaseSeconds * 1000 + this.o.random.int(200, 2000));
      return this.ack(d).then(() => false);
    }
    if (roll < nack + deadLetter + slowAck + drop) return false;
    return this.ack(d);
  }

  private async ack(d: Delivery): Promise<boolean> {
    const settle = this.o.history.settling(d, 'ack');
    try {
      const [result] = await this.o.client.ack(this.o.queue, [d.receipt]);
      this.o.history.answered('ack', 200);
      const outcome: SettleOutcome =
        result?.status === 'acked' ? 'acked' : result?.status === 'stale_receipt' ? 'stale' : 'invalid';
      this.o.history.settled(settle, outcome);
      return outcome === 'acked';
    } catch (err) {
      this.o.history.failed('ack', err);
      this.o.history.settled(settle, 'unknown');
      return false;
    }
  }

  private async nack(d: Delivery, retryable: boolean): Promise<false> {
    const settle = this.o.history.settling(d, 'nack');
    try {
      await this.o.client.nack(this.o.queue, d.receipt, { retryable, error: 'chaos: simulated failure' });
      this.o.history.answered('nack', 200);
      this.o.history.settled(settle, 'nacked');
    } catch (err) {
      this.o.history.failed('nack', err);
      this.o.history.settled(settle, err instanceof StaleReceiptError ? 'stale' : 'unknown');
    }
    return false;
  }
}

function retryAfterMs(err: unknown): number {
  return err instanceof LeaseqApiError ? (err.retryAfterSeconds ?? 0) * 1000 : 0;
}
