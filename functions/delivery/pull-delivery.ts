import {
  type AdmittedSignal,
  type Handoff,
  type LeaseTerms,
  NOTHING_HANDED,
} from '../admission/admitted-signal.js';
import { sleep } from '../core/async.js';
import type { QueueConfig } from '../core/config.js';
import { InvalidRequestError, StaleReceiptError } from '../core/errors.js';
import { leaseExpiry, maxLeaseExpiry, receiveLease } from '../core/lease.js';
import { FREE_WAIT_MS } from '../core/long-polls.js';
import type { Delivery, ReceiptSigner } from '../core/receipt.js';
import type { Counters } from '../store/counters.js';
import type { PollCancels } from '../store/poll-cancels.js';
import { PAUSE_CHECK_MS, type QueueControls } from '../store/queue-controls.js';
import type { ExtendRequest, NackRequest, ReceiveRequest } from '../wire/requests.js';
import type { AckStatus, DeliveredMessage } from '../wire/responses.js';
import { type RangeReceiver, RECEIVE_MAX_BYTES } from './range-receiver.js';
import type { GiveBack, WaitPlaces } from './wait-places.js';
import type { WakeChannel } from './wake-channel.js';

/**
 * Pull consumption (docs/contract.md, "Consume (pull)"): receive with leases, ack, nack, extend. The edge's
 * checks and the long poll; the lease layer (range-receiver.ts) does the rest.
 */

/** An AdmittedSignal for this table's queues. */
export type AdmissionWaits = Pick<AdmittedSignal, 'seen' | 'wait'> & {
  /** Every admission of the queue wakes waiters here (RuntimeConfig.admissionsInProcess). */
  announcesAll?: boolean;
};

export interface PullDeliveryDeps {
  counters: Counters;
  /** A paused queue delivers nothing; a purged one acks what was produced before its mark. */
  controls: Pick<QueueControls, 'look'>;
  ranges: RangeReceiver;
  signer: () => Promise<ReceiptSigner>;
  /** Long polls their callers called off (POST /queues/{q}/receive/cancel). */
  pollCancels: Pick<PollCancels, 'isCancelled' | 'cancel'>;
  /** Admissions in this process that wake a long poll (admission/admitted-signal.ts). */
  admissions?: AdmissionWaits;
  /** The queue's places to wait: a receive that finds none answers then (wait-places.ts). */
  places: Pick<WaitPlaces, 'take'>;
  /** Registers a receive's wake channel connection for the queue's next admission. */
  wakes?: Pick<WakeChannel, 'register'>;
  now?: () => number;
}

/** Long polling re-reads the window at this pace, slowing while it stays empty. */
const POLL_FIRST_MS = 50;
const POLL_MAX_MS = 500;
/**
 * The first re-read where every admission wakes the poll: what it re-reads for (a lease that
 * ended) is not a latency goal, and early re-reads were a third of the local runtime's requests
 * under load, racing the receivers an admission woke for the same entries.
 */
const ANNOUNCED_FIRST_MS = 200;

export class PullDelivery {
  constructor(private readonly deps: PullDeliveryDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  async receive(
    queue: string,
    config: QueueConfig,
    req: ReceiveRequest,
    consumerId: string,
    /** Whether an admission may hand this receiver entries on its wake channel (no byte quota to spend). */
    mayBeHanded = true,
  ): Promise<DeliveredMessage[]> {
    const leaseSeconds = req.lease_seconds ?? config.lease_seconds;
    if (leaseSeconds > config.max_lease_seconds) {
      throw new InvalidRequestError(`lease_seconds is at most ${config.max_lease_seconds} on this queue`, [
        { path: 'lease_seconds', message: `at most ${config.max_lease_seconds}` },
      ]);
    }
    const deadline = this.now() + req.wait_seconds * 1000;
    const terms: LeaseTerms = {
      wants: req.max_messages,
      maxBytes: RECEIVE_MAX_BYTES,
      lease: (now) => receiveLease(config, now, leaseSeconds, consumerId),
    };
    const started = this.now();
    let place: GiveBack | undefined;
    try {
      // A place to wait is taken after a second of waiting, and given back at the end.
      return await this.poll(
        queue,
        config,
        { ...req, leaseSeconds, consumerId, mayBeHanded },
        terms,
        deadline,
        async () => {
          const now = this.now();
          if (now - started < FREE_WAIT_MS) return true;
          place ??= await this.deps.places.take(queue, config, now);
          return place !== undefined;
        },
      );
    } finally {
      place?.();
    }
  }

  /** Looks until there is something to answer, waiting between looks while `mayWait` says so. */
  private async poll(
    queue: string,
    config: QueueConfig,
    req: ReceiveRequest & { leaseSeconds: number; consumerId: string; mayBeHanded: boolean },
    terms: LeaseTerms,
    deadline: number,
    mayWait: () => Promise<boolean>,
  ): Promise<DeliveredMessage[]> {
    const { leaseSeconds, consumerId } = req;
    const first = this.deps.admissions?.announcesAll ? ANNOUNCED_FIRST_MS : POLL_FIRST_MS;
    /** What the admission that woke this poll handed it: entries leased to it, or its share to lease. */
    let handed: Handoff = NOTHING_HANDED;
    let registered = false;
    for (let pause = first; ; pause = Math.min(POLL_MAX_MS, pause * 2)) {
      // Paused: the long poll waits it out, looking again as often as a pause is read. What was
      // leased to it before the pause was seen is delivered: nobody else can.
      const seen = this.deps.admissions?.seen(queue) ?? 0;
      const { paused, purgedBefore } = await this.deps.controls.look(queue);
      const delivered =
        paused && !handed.leased.length
          ? []
          : await this.deps.ranges.receive(queue, config, req.max_messages, leaseSeconds, consumerId, handed);
      const kept =
        purgedBefore === undefined
          ? delivered
          : await this.dropPurged(queue, config, delivered, purgedBefore);
      if (kept.length) return this.unlessCalledOff(queue, config, req.poll_id, kept);
      const left = deadline - this.now();
      if (registered) return [];
      if (left <= 0 || !(await mayWait())) {
        if (req.wake_connection === undefined || !this.deps.wakes) return [];
        // Registered before a last look: what is admitted after that look wakes the connection.
        await this.deps.wakes.register(queue, req.wake_connection, {
          wants: req.max_messages,
          ...(req.mayBeHanded ? { lease: { seconds: leaseSeconds, consumerId } } : {}),
        });
        registered = true;
        handed = NOTHING_HANDED;
        continue;
      }
      // Jittered, so receivers waiting together do not all look (and race) at the same moment;
      // woken sooner by an admission in this process.
      const wait = Math.min((paused ? PAUSE_CHECK_MS : pause) * (0.5 + Math.random() / 2), left);
      handed =
        this.deps.admissions && !paused
          ? await this.deps.admissions.wait(queue, seen, terms, wait)
          : await sleep(wait).then(() => NOTHING_HANDED);
    }
  }

  /** Calls off a long poll by its `poll_id`: what it leases from now on is given back. */
  async cancelPoll(queue: string, pollId: string): Promise<void> {
    await this.deps.pollCancels.cancel(queue, pollId, this.now());
  }

  /**
   * A poll its caller called off gives back what it leased (no attempt used) and answers nothing:
   * nobody is there to take it. One consistent read, only for a named poll that has messages.
   */
  private async unlessCalledOff(
    queue: string,
    config: QueueConfig,
    pollId: string | undefined,
    delivered: DeliveredMessage[],
  ): Promise<DeliveredMessage[]> {
    if (pollId === undefined || !(await this.deps.pollCancels.isCancelled(queue, pollId))) return delivered;
    await this.deps.ranges.giveBack(queue, config, delivered);
    return [];
  }

  /**
   * A purge (SQS's PurgeQueue) is applied as receives meet what it purged: a message produced
   * before the mark is acked instead of delivered, so a purge costs one write, not a walk of the
   * queue; its messages leave the counts as receives reach them.
   */
  private async dropPurged(
    queue: string,
    config: QueueConfig,
    delivered: DeliveredMessage[],
    purgedBefore: number,
  ): Promise<DeliveredMessage[]> {
    const purged = delivered.filter((m) => Date.parse(m.enqueued_at) < purgedBefore);
    if (purged.length)
      await this.ack(
        queue,
        config,
        purged.map((m) => m.receipt),
      );
    return delivered.filter((m) => !purged.includes(m));
  }

  /**
   * Each receipt's status, and how long each acked delivery was held (delivery to ack, the
   * handler's time as the server sees it: what must stay under the lease).
   */
  async ack(
    queue: string,
    config: QueueConfig,
    receipts: readonly string[],
  ): Promise<{ results: { receipt: string; status: AckStatus }[]; heldSeconds: number[] }> {
    const signer = await this.deps.signer();
    const verified = receipts.map((receipt) => ({ receipt, d: signer.verify(receipt, queue) }));
    const valid = verified.filter((x): x is { receipt: string; d: Delivery } => x.d?.entry !== undefined);
    const statuses = await this.deps.ranges.ack(queue, config, valid);
    const now = this.now();
    return {
      results: receipts.map((receipt) => ({ receipt, status: statuses.get(receipt) ?? 'invalid_receipt' })),
      heldSeconds: valid.filter((x) => statuses.get(x.receipt) === 'acked').map((x) => heldSeconds(x.d, now)),
    };
  }

  /** The failed attempt's answer, and how long its delivery was held before the nack. */
  async nack(
    queue: string,
    config: QueueConfig,
    req: NackRequest,
  ): Promise<{
    answer: { status: 'retry_scheduled' | 'dead_lettered'; attempt: number; next_attempt_at?: string };
    heldSeconds: number;
  }> {
    const d = await this.verified(queue, req.receipt);
    const failed = d.entry ? await this.deps.ranges.nack(queue, config, d, req) : undefined;
    if (!failed) return this.stale(queue);
    const { outcome } = failed;
    const answer =
      outcome.kind === 'retry'
        ? {
            status: 'retry_scheduled' as const,
            attempt: outcome.nextAttempt,
            next_attempt_at: new Date(outcome.dueAt).toISOString(),
          }
        : { status: 'dead_lettered' as const, attempt: failed.attempt };
    return { answer, heldSeconds: heldSeconds(d, this.now()) };
  }

  async extend(
    queue: string,
    config: QueueConfig,
    req: ExtendRequest,
  ): Promise<{ lease_expires_at: string; max_lease_expires_at: string }> {
    const d = await this.verified(queue, req.receipt);
    const expiresAt = leaseExpiry(config, d.deliveredAt, this.now(), req.lease_seconds);
    if (!(d.entry !== undefined && (await this.deps.ranges.extend(queue, d, expiresAt))))
      return this.stale(queue);
    return {
      lease_expires_at: new Date(expiresAt).toISOString(),
      max_lease_expires_at: new Date(maxLeaseExpiry(config, d.deliveredAt)).toISOString(),
    };
  }

  private async verified(queue: string, receipt: string): Promise<Delivery> {
    const d = (await this.deps.signer()).verify(receipt, queue);
    if (!d)
      throw new InvalidRequestError('the receipt is not valid', [
        { path: 'receipt', message: 'not a receipt of this queue' },
      ]);
    return d;
  }

  private async stale(queue: string): Promise<never> {
    await this.deps.counters.addStats(queue, { stale_receipts: 1 });
    throw new StaleReceiptError();
  }
}

function heldSeconds(d: Delivery, now: number): number {
  return Math.max(0, now - d.deliveredAt) / 1000;
}
