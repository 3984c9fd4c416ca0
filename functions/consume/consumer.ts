import type {
  AckStatus,
  DeliveredMessage,
  ExtendRequest,
  NackRequest,
  ReceiveRequest,
} from '../api/schemas.js';
import type { ClaimStore } from '../claims/claims.js';
import { mapLimit, sleep } from '../core/async.js';
import { type QueueConfig, streamName, usesRanges } from '../core/config.js';
import { InvalidRequestError, StaleReceiptError } from '../core/errors.js';
import { leaseExpiry, maxLeaseExpiry } from '../core/lease.js';
import type { Delivery, ReceiptSigner } from '../core/receipt.js';
import { retentionTtls } from '../core/retention.js';
import type { ShardDirectory } from '../log/stream.js';
import type { Counters } from '../store/counters.js';
import { gsi } from '../store/keys.js';
import type { MessageStore, StateItem, StoredBody } from '../store/messages.js';
import type { StorageMeter } from '../store/storage.js';
import type { Failures } from './failures.js';
import type { KeyOrder } from './key-order.js';
import type { RangeConsumer } from './range-consumer.js';

/** Pull consumption (API.md "Consume (pull)"): receive with leases, ack, nack, extend. */

export interface ConsumerDeps {
  tenant: string;
  messages: MessageStore;
  counters: Counters;
  claims: ClaimStore;
  shards: ShardDirectory;
  keyOrder: KeyOrder;
  failures: Failures;
  storage: StorageMeter;
  /** Unordered pull queues: the lease layer over the log. */
  ranges: RangeConsumer;
  signer: () => Promise<ReceiptSigner>;
  now?: () => number;
}

/** Long polling re-reads the window at this pace, slowing while it stays empty. */
const POLL_FIRST_MS = 50;
const POLL_MAX_MS = 500;
/** Reads of the ready partitions per pass: a lost lease write means another receiver is there. */
const LOOKS = 3;
/** Candidates read per message wanted, per shard. */
const READ_FACTOR = 4;
/** The first lease round of a read takes this share of what it saw (at most what it wants). */
const FIRST_SHARE = 8;
/** Receivers that lost a race read again up to this far apart. */
const REREAD_JITTER_MS = 20;

export class Consumer {
  constructor(private readonly deps: ConsumerDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  async receive(
    queue: string,
    config: QueueConfig,
    req: ReceiveRequest,
    consumerId: string,
  ): Promise<DeliveredMessage[]> {
    const leaseSeconds = req.lease_seconds ?? config.lease_seconds;
    if (leaseSeconds > config.max_lease_seconds) {
      throw new InvalidRequestError(`lease_seconds is at most ${config.max_lease_seconds} on this queue`, [
        { path: 'lease_seconds', message: `at most ${config.max_lease_seconds}` },
      ]);
    }
    const deadline = this.now() + req.wait_seconds * 1000;
    if (usesRanges(config)) return this.receiveRanges(queue, config, req, consumerId, leaseSeconds, deadline);
    const leased: StateItem[] = [];
    for (let pause = POLL_FIRST_MS; ; pause = Math.min(POLL_MAX_MS, pause * 2)) {
      leased.push(
        ...(await this.leaseSome(queue, config, req.max_messages - leased.length, leaseSeconds, consumerId)),
      );
      const left = deadline - this.now();
      if (leased.length > 0 || left <= 0) break;
      // Jittered, so receivers waiting together do not all look (and race) at the same moment.
      await sleep(Math.min(pause * (0.5 + Math.random() / 2), left));
    }
    if (!leased.length) return [];
    const [delivered] = await Promise.all([
      this.deliver(queue, leased),
      this.deps.counters.addStats(queue, { redelivered: leased.filter((m) => m.attempt > 1).length }),
    ]);
    return delivered;
  }

  private async receiveRanges(
    queue: string,
    config: QueueConfig,
    req: ReceiveRequest,
    consumerId: string,
    leaseSeconds: number,
    deadline: number,
  ): Promise<DeliveredMessage[]> {
    const r = this.deps.ranges;
    for (let pause = POLL_FIRST_MS; ; pause = Math.min(POLL_MAX_MS, pause * 2)) {
      const leased = await r.leaseSome(queue, config, req.max_messages, leaseSeconds, consumerId);
      if (leased.length) return r.deliver(queue, leased);
      const left = deadline - this.now();
      if (left <= 0) return [];
      await sleep(Math.min(pause * (0.5 + Math.random() / 2), left));
    }
  }

  /**
   * One pass over the shards' ready partitions; each lease is one conditional write, and one that
   * loses to another receiver is billed all the same. Receivers collide where few messages are
   * visible, so a pass starts with a share of what it saw and doubles while every write lands; a
   * lost write means the snapshot is stale and others are there: it reads again, probing with one.
   */
  private async leaseSome(
    queue: string,
    config: QueueConfig,
    want: number,
    leaseSeconds: number,
    consumerId: string,
  ): Promise<StateItem[]> {
    const shards = await this.deps.shards.shards(streamName(this.deps.tenant, queue));
    const lease = (item: StateItem) => {
      const now = this.now();
      return this.deps.messages.lease(item, {
        deliveredAt: now,
        expiresAt: leaseExpiry(config, now, now, leaseSeconds),
        consumerId,
      });
    };
    if (config.ordered) return this.leaseOrdered(queue, shards, want, lease);
    const won: StateItem[] = [];
    for (let look = 0; look < LOOKS && won.length < want; look++) {
      // Apart, so the receivers that lost together do not read and race together again.
      if (look > 0) await sleep(Math.random() * REREAD_JITTER_MS);
      // Reading more than it leases spreads concurrent receivers over more of the partition.
      const limit = Math.min(100, (want - won.length) * READ_FACTOR);
      const perShard = await Promise.all(
        shards.map((shard) => this.deps.messages.partition(gsi.ready(queue, shard), { limit })),
      );
      const seen = shuffle(perShard.flat());
      let size = look === 0 ? Math.ceil(seen.length / FIRST_SHARE) : 1;
      let lost = false;
      for (let i = 0; i < seen.length && won.length < want && !lost; size *= 2) {
        const round = seen.slice(i, i + Math.min(size, want - won.length));
        i += round.length;
        const wins = (await mapLimit(round, 16, lease)).filter((r): r is StateItem => r !== undefined);
        won.push(...wins);
        lost = wins.length < round.length;
      }
      // Nothing lost: it took all it needed or all there was.
      if (!lost) break;
    }
    return won;
  }

  /** Ordered queues look further: a key's first ready message may sit behind busy keys. */
  private async leaseOrdered(
    queue: string,
    shards: readonly string[],
    want: number,
    lease: (item: StateItem) => Promise<StateItem | undefined>,
  ): Promise<StateItem[]> {
    const perShard = await Promise.all(
      shards.map((shard) => this.deps.messages.partition(gsi.ready(queue, shard), { limit: 100 })),
    );
    const candidates = await this.deps.keyOrder.leasable(queue, perShard.flat());
    const won: StateItem[] = [];
    for (let i = 0; i < candidates.length && won.length < want; ) {
      const round = candidates.slice(i, i + (want - won.length));
      i += round.length;
      const results = await mapLimit(round, 16, async (item) =>
        (await this.deps.keyOrder.claim(queue, item)) ? lease(item) : undefined,
      );
      for (const r of results) if (r) won.push(r);
    }
    return won;
  }

  private async deliver(queue: string, leased: StateItem[]): Promise<DeliveredMessage[]> {
    const [bodies, signer] = await Promise.all([this.deps.messages.bodies(leased), this.deps.signer()]);
    return mapLimit(leased, 8, async (item) => {
      const body = bodies.get(item.pk) as StoredBody;
      return {
        message_id: item.message_id,
        receipt: signer.sign({
          queue,
          messageId: item.message_id,
          shard: item.shard,
          generation: item.gen,
          deliveredAt: item.delivered_at as number,
        }),
        key: body.key ?? null,
        payload: await this.deps.claims.payloadOf(body),
        headers: body.headers ?? {},
        attempt: item.attempt,
        enqueued_at: body.produced_at,
        lease_expires_at: new Date(item.lease_expires_at as number).toISOString(),
      };
    });
  }

  async ack(
    queue: string,
    config: QueueConfig,
    receipts: readonly string[],
  ): Promise<{ receipt: string; status: AckStatus }[]> {
    const signer = await this.deps.signer();
    if (usesRanges(config)) return this.ackRanges(queue, config, receipts, signer);
    const now = this.now();
    const { tombstoneTtl } = retentionTtls(config, now);
    const freed = new Map<string, number>();
    let stale = 0;
    let freedBytes = 0;
    const results = await mapLimit(receipts, 16, async (receipt) => {
      const d = signer.verify(receipt, queue);
      if (!d) return { receipt, status: 'invalid_receipt' as const };
      const { outcome, key, bytes } = await this.deps.messages.ack(
        queue,
        d.messageId,
        d.generation,
        now,
        tombstoneTtl,
      );
      if (outcome === 'stale') {
        stale++;
        return { receipt, status: 'stale_receipt' as const };
      }
      if (outcome === 'acked') {
        freed.set(d.shard, (freed.get(d.shard) ?? 0) + 1);
        freedBytes += bytes ?? 0;
        if (config.ordered && key !== undefined) await this.deps.keyOrder.finished(queue, key, d.messageId);
      }
      return { receipt, status: 'acked' as const };
    });
    const newlyAcked = [...freed.values()].reduce((a, b) => a + b, 0);
    await Promise.all([
      ...[...freed].map(([shard, n]) => this.deps.counters.addWindow(queue, shard, -n)),
      this.deps.counters.addStats(queue, { stale_receipts: stale }),
      this.deps.storage.release(queue, freedBytes, newlyAcked),
    ]);
    return results;
  }

  private async ackRanges(
    queue: string,
    config: QueueConfig,
    receipts: readonly string[],
    signer: ReceiptSigner,
  ): Promise<{ receipt: string; status: AckStatus }[]> {
    const verified = receipts.map((receipt) => ({ receipt, d: signer.verify(receipt, queue) }));
    const valid = verified.filter((x): x is { receipt: string; d: Delivery } => x.d?.entry !== undefined);
    const statuses = await this.deps.ranges.ack(queue, config, valid);
    return receipts.map((receipt) => ({ receipt, status: statuses.get(receipt) ?? 'invalid_receipt' }));
  }

  async nack(
    queue: string,
    config: QueueConfig,
    req: NackRequest,
  ): Promise<{ status: 'retry_scheduled' | 'dead_lettered'; attempt: number; next_attempt_at?: string }> {
    const d = await this.verified(queue, req.receipt);
    if (usesRanges(config)) {
      const failed = d.entry ? await this.deps.ranges.nack(queue, config, d, req) : undefined;
      if (!failed) return this.stale(queue);
      const { outcome } = failed;
      return outcome.kind === 'retry'
        ? {
            status: 'retry_scheduled',
            attempt: outcome.nextAttempt,
            next_attempt_at: new Date(outcome.dueAt).toISOString(),
          }
        : { status: 'dead_lettered', attempt: failed.attempt };
    }
    const now = this.now();
    const item = await this.deps.messages.get(queue, d.messageId);
    if (item?.state !== 'leased' || item.gen !== d.generation || (item.lease_expires_at ?? 0) <= now) {
      return this.stale(queue);
    }
    const outcome = req.release
      ? await this.deps.failures.release(queue, item, d.generation, req.retry_after_seconds ?? 0, now)
      : await this.deps.failures.fail(
          queue,
          config,
          item,
          {
            generation: d.generation,
            reason: req.retryable ? 'nack' : 'non_retryable',
            deliveredAt: d.deliveredAt,
            lease: 'live',
            ...(req.error !== undefined ? { error: req.error } : {}),
            ...(req.retry_after_seconds !== undefined ? { retryAfterSeconds: req.retry_after_seconds } : {}),
          },
          now,
        );
    if (!outcome) return this.stale(queue);
    return outcome.kind === 'retry'
      ? {
          status: 'retry_scheduled',
          attempt: outcome.nextAttempt,
          next_attempt_at: new Date(outcome.dueAt).toISOString(),
        }
      : { status: 'dead_lettered', attempt: item.attempt };
  }

  async extend(
    queue: string,
    config: QueueConfig,
    req: ExtendRequest,
  ): Promise<{ lease_expires_at: string; max_lease_expires_at: string }> {
    const d = await this.verified(queue, req.receipt);
    const now = this.now();
    const expiresAt = leaseExpiry(config, d.deliveredAt, now, req.lease_seconds);
    const extended = usesRanges(config)
      ? d.entry !== undefined && (await this.deps.ranges.extend(queue, d, expiresAt))
      : await this.deps.messages.extend(queue, d.messageId, d.generation, expiresAt, now);
    if (!extended) return this.stale(queue);
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

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}
