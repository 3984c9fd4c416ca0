import { type Handoff, type LeasedEntry, NOTHING_HANDED } from '../admission/admitted-signal.js';
import type { ClaimStore } from '../claims/claims.js';
import { mapLimit } from '../core/async.js';
import type { QueueConfig } from '../core/config.js';
import { messageView, payloadBytes } from '../core/envelope.js';
import { leaseExpiry, receiveLease } from '../core/lease.js';
import { runPicks } from '../core/ordering.js';
import {
  entryStatus,
  type Lease,
  leaseFrontier,
  type Pick,
  pickEntries,
  RANGES_PER_LOOK,
  type Range,
} from '../core/ranges.js';
import type { Delivery, ReceiptSigner } from '../core/receipt.js';
import { retentionTtls } from '../core/retention.js';
import type { Outcome } from '../core/retry-policy.js';
import type { ShardDirectory } from '../log/stream.js';
import type { Counters } from '../store/counters.js';
import type { KeyBlocks } from '../store/key-blocks.js';
import type { KeyStates } from '../store/key-states.js';
import type { MessageStore, StateItem } from '../store/messages.js';
import type { RangeStore } from '../store/ranges.js';
import type { SegmentEntry, SegmentStore } from '../store/segments.js';
import type { StorageMeter } from '../store/storage.js';
import type { NackRequest } from '../wire/requests.js';
import type { AckStatus, DeliveredMessage } from '../wire/responses.js';
import type { HeldDelivery, HeldLeased } from './held-delivery.js';
import { CONTENDED_MS, entryName, type OrderedLeased, OrderedLook } from './ordered-look.js';
import type { QueueLineage } from './queue-lineage.js';
import type { RangeFailures } from './range-failures.js';

/**
 * Pull consumption on the lease layer: a receive reads a few ranges per shard from where this
 * instance last saw a free entry, leases with one conditional write per range, and answers from
 * the immutable segments; an ack is one write per range. Nothing is written per message.
 */

export interface RangeReceiverDeps {
  ranges: RangeStore;
  /** Leases the gap cap moved out of their range live in the message's item. */
  messages: MessageStore;
  segments: SegmentStore;
  claims: ClaimStore;
  shards: ShardDirectory;
  failures: RangeFailures;
  /** Ordered queues: messages in their keys' hold areas, the keys blocked, and their states. */
  held: HeldDelivery;
  blocks: KeyBlocks;
  keys: KeyStates;
  /** Ordered queues on a resharded stream: a child's keys wait for their ancestors. */
  lineage?: QueueLineage;
  counters: Counters;
  storage: StorageMeter;
  signer: () => Promise<ReceiptSigner>;
  now?: () => number;
}

/**
 * A receive's answer stays under this many payload bytes (a synchronous Lambda answer is at most
 * 6 MB, and JSON escaping and the envelope add to it); one message is always delivered.
 */
export const RECEIVE_MAX_BYTES = 4 * 1024 * 1024;

export class RangeReceiver {
  /** Per shard, the lowest range where this instance last saw a free entry: none is below it, ever. */
  private readonly frontier = new Map<string, string>();
  /** Per queue, until when this instance reads before it writes a lease: its last lost write. */
  private readonly contendedUntil = new Map<string, number>();

  private readonly ordered: OrderedLook;

  constructor(private readonly deps: RangeReceiverDeps) {
    this.ordered = new OrderedLook(deps);
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /**
   * One look: up to `want` messages leased and answered. On an ordered queue each key's first
   * unfinished entries (ordered-look.ts); held messages of free keys fill what is left.
   * What an admission in this process `handed` this receiver (admitted-signal.ts) comes first:
   * entries it leased to it are answered as they are; its share of the new ranges is leased as
   * written, without reading them (what of it went to others only cost a lost write), and the
   * look follows when nothing was won. An ordered queue's admission leases to it only runs of
   * keys it found free (range-admission.ts), and hands it no share: a look finds the rest.
   */
  async receive(
    queue: string,
    config: QueueConfig,
    want: number,
    leaseSeconds: number,
    consumerId: string,
    handed: Handoff = NOTHING_HANDED,
  ): Promise<DeliveredMessage[]> {
    if (handed.leased.length) return this.deliver(queue, handed.leased);
    if (config.ordered) return this.receiveOrdered(queue, config, want, leaseSeconds, consumerId);
    const fresh = handed.share.length
      ? await this.leaseFrom(queue, config, handed.share, leaseSeconds, consumerId, true)
      : [];
    if (fresh.length) return this.deliver(queue, fresh);
    const leased = await this.leaseSome(queue, config, want, leaseSeconds, consumerId);
    return leased.length ? this.deliver(queue, leased) : [];
  }

  /**
   * An ordered queue's look: each shard's runs (ordered-look.ts), then held messages of free keys
   * for what is left; a shard's hold areas are looked at only when its blocks item names a key.
   */
  private async receiveOrdered(
    queue: string,
    config: QueueConfig,
    want: number,
    leaseSeconds: number,
    consumerId: string,
  ): Promise<DeliveredMessage[]> {
    const shards = await this.liveShards(queue, config.stream);
    const now = this.now();
    const looked = await Promise.all(
      shards.map(async (shard) => ({ shard, ...(await this.ordered.runs(queue, config, shard, want, now)) })),
    );
    const blockedShards = looked.filter((l) => l.blocked.size).map((l) => l.shard);
    const [leased, keys] = await Promise.all([
      this.ordered.lease(queue, looked, want, receiveLease(config, now, leaseSeconds, consumerId), (runs) =>
        this.withinBytes(queue, runPicks(runs)).then(
          (read) =>
            new Map(
              read.flatMap(({ pick, entries }) =>
                [...entries].map(
                  ([index, entry]) => [entryName({ range: pick.range, index }), entry] as const,
                ),
              ),
            ),
        ),
      ),
      blockedShards.length ? this.deps.held.marked(queue, blockedShards) : [],
    ]);
    const held =
      keys.length && leased.length < want
        ? await this.deps.held.leaseSome(
            queue,
            want - leased.length,
            { expiresAt: leaseExpiry(config, now, now, leaseSeconds), consumerId },
            keys,
          )
        : [];
    const [fromRanges, fromHolds] = await Promise.all([
      leased.length ? this.deliver(queue, leased) : [],
      this.deliverHeld(queue, held),
    ]);
    return [...fromRanges, ...fromHolds];
  }

  /**
   * The shards a look reads: every one the stream lists but those a reshard closed and the queue
   * finished (nothing of the queue is left in them, for good), which would cost a read a look each.
   */
  private async liveShards(queue: string, stream: string): Promise<string[]> {
    const links = [...(await this.deps.shards.lineage(stream)).values()].filter((l) => l.listed);
    if (!this.deps.lineage || !links.some((l) => l.closed)) return links.map((l) => l.id);
    const progress = await this.deps.lineage.progress(queue, this.now());
    return links.filter((l) => !l.closed || progress.get(l.id) !== 'finished').map((l) => l.id);
  }

  /** One look over the shards: leases up to `want` free entries. */
  private async leaseSome(
    queue: string,
    config: QueueConfig,
    want: number,
    leaseSeconds: number,
    consumerId: string,
  ): Promise<LeasedEntry[]> {
    const shards = await this.liveShards(queue, config.stream);
    const perShard = await Promise.all(shards.map((shard) => this.readFrom(queue, shard)));
    return this.leaseFrom(queue, config, pickEntries(perShard.flat(), want), leaseSeconds, consumerId, false);
  }

  /**
   * Leases what `picks` name that is still free: one conditional write per range. `justWritten`:
   * the ranges are as their admission wrote them a moment ago, which no read would improve on.
   */
  private async leaseFrom(
    queue: string,
    config: QueueConfig,
    picks: readonly Pick[],
    leaseSeconds: number,
    consumerId: string,
    justWritten: boolean,
    maxBytes?: number,
  ): Promise<LeasedEntry[]> {
    const [first, ...rest] = await this.withinBytes(queue, picks, maxBytes);
    if (!first) return [];
    const leaseOne = async ({ pick, entries }: { pick: Pick; entries: Map<number, SegmentEntry> }) => {
      const now = this.now();
      const lease = receiveLease(config, now, leaseSeconds, consumerId);
      // Contended: a consistent read first finds most of what was taken since the look for a read
      // unit, where the write would fail for a write unit (and of a partition's scarcer budget).
      const contended = !justWritten && (this.contendedUntil.get(queue) ?? 0) > now;
      const picked = contended ? await this.stillFree(queue, pick, now) : pick.indexes;
      let taken = picked.length
        ? await this.deps.ranges.leaseFree(queue, pick.range, picked, lease)
        : undefined;
      const lost = !taken;
      if (!taken && picked.length) {
        this.contendedUntil.set(queue, now + CONTENDED_MS);
        // Other receivers took them all, or one waits for its retry: once more with what a fresh read shows free.
        const indexes = await this.stillFree(queue, pick, now);
        taken = indexes.length
          ? await this.deps.ranges.leaseFree(queue, pick.range, indexes, lease)
          : undefined;
      }
      const won = (taken?.won ?? []).map((index) => ({
        range: taken?.range as Range,
        index,
        entry: entries.get(index) as SegmentEntry,
      }));
      return { lost, won };
    };
    // The first range's write tells whether this look is stale: if other receivers took all of it
    // meanwhile, they likely took the others too, and a write each would fail (a unit each).
    const lead = await leaseOne(first);
    if (lead.lost) return lead.won;
    const others = await mapLimit(rest, 8, async (p) => (await leaseOne(p)).won);
    return [...lead.won, ...others.flat()];
  }

  /** What of a pick a consistent read of its range shows still free. */
  private async stillFree(queue: string, pick: Pick, now: number): Promise<number[]> {
    const fresh = await this.deps.ranges.get(queue, pick.range.shard, pick.range.start);
    return fresh ? pick.indexes.filter((i) => entryStatus(fresh, i, now) === 'free') : [];
  }

  /** Ranges from the shard's lease frontier (or its commit point, the first time). */
  private async readFrom(queue: string, shard: string): Promise<Range[]> {
    const at = `${queue}\u0000${shard}`;
    const start = this.frontier.get(at) ?? (await this.deps.ranges.commitHint(queue, shard));
    const ranges = await this.deps.ranges.from(queue, shard, start, RANGES_PER_LOOK);
    const frontier = leaseFrontier(ranges);
    if (frontier !== undefined) this.frontier.set(at, frontier);
    return ranges;
  }

  /**
   * The segment entries of what was picked, read before any lease is written (a lease must never
   * point at what cannot be answered), cut to the answer's byte budget: a receive's, its first
   * entry whatever its size, or strictly `maxBytes`.
   */
  private async withinBytes(
    queue: string,
    picks: readonly Pick[],
    maxBytes?: number,
  ): Promise<{ pick: Pick; entries: Map<number, SegmentEntry> }[]> {
    const segments = await mapLimit(picks, 8, (p) =>
      this.deps.segments.get(queue, p.range.shard, p.range.segment),
    );
    let budget = maxBytes ?? RECEIVE_MAX_BYTES;
    let first = maxBytes === undefined;
    const out: { pick: Pick; entries: Map<number, SegmentEntry> }[] = [];
    // A retry's entry carries its payload by reference: read where it points (cached, immutable).
    const resolved = await mapLimit(picks, 8, (pick, k) =>
      mapLimit(pick.indexes, 8, async (index) => {
        const entry = segments[k]?.[pick.range.segment.offset + index];
        const envelope = entry && (await this.deps.segments.resolve(queue, entry.envelope));
        return entry && envelope ? { ...entry, envelope } : undefined;
      }),
    );
    picks.forEach((pick, k) => {
      const entries = new Map<number, SegmentEntry>();
      for (const [n, index] of pick.indexes.entries()) {
        const entry = resolved[k]?.[n];
        if (!entry) continue;
        const bytes = payloadBytes(entry.envelope);
        if (!first && bytes > budget) break;
        budget -= bytes;
        first = false;
        entries.set(index, entry);
      }
      if (entries.size) out.push({ pick: { range: pick.range, indexes: [...entries.keys()] }, entries });
    });
    return out;
  }

  private async deliverHeld(queue: string, held: HeldLeased[]): Promise<DeliveredMessage[]> {
    if (!held.length) return [];
    const signer = await this.deps.signer();
    const delivered = await mapLimit(held, 8, async (h) => {
      const env = h.envelope;
      return {
        ...messageView(env, await this.deps.claims.payloadOf(env)),
        receipt: signer.sign({
          queue,
          messageId: env.message_id,
          shard: h.held.shard,
          generation: h.generation,
          deliveredAt: h.deliveredAt,
          entry: { ...h.entry, bytes: payloadBytes(env) },
          held: true,
        }),
        lease_expires_at: new Date(h.expiresAt).toISOString(),
      };
    });
    await this.deps.counters.addStats(queue, {
      redelivered: held.filter((h) => h.envelope.attempt > 1).length,
    });
    return delivered;
  }

  /**
   * A wake channel receiver's share of an admission's new ranges (wake-channel.ts), leased as
   * written and answered as its receive would have been, within `maxBytes`.
   */
  async handShare(
    queue: string,
    config: QueueConfig,
    share: readonly Pick[],
    lease: { seconds: number; consumerId: string },
    maxBytes: number,
  ): Promise<DeliveredMessage[]> {
    const leased = await this.leaseFrom(
      queue,
      config,
      share,
      lease.seconds,
      lease.consumerId,
      true,
      maxBytes,
    );
    return leased.length ? this.deliver(queue, leased) : [];
  }

  private async deliver(
    queue: string,
    leased: readonly (LeasedEntry | OrderedLeased)[],
  ): Promise<DeliveredMessage[]> {
    const signer = await this.deps.signer();
    // An ordered queue's entry delivered again in place carries its attempt in its range.
    const envelopeOf = ({ range, index, entry }: LeasedEntry) => {
      const attempt = range.attempts.get(index);
      return attempt === undefined ? entry.envelope : { ...entry.envelope, attempt };
    };
    const redelivered = leased.filter((l) => envelopeOf(l).attempt > 1).length;
    const [delivered] = await Promise.all([
      mapLimit(leased, 8, async (l) => {
        const { range, index } = l;
        const env = envelopeOf(l);
        const lease = range.leases.get(index);
        return {
          ...messageView(env, await this.deps.claims.payloadOf(env)),
          receipt: signer.sign({
            queue,
            messageId: env.message_id,
            shard: range.shard,
            generation: env.entry,
            deliveredAt: lease?.deliveredAt ?? 0,
            entry: { range: range.start, index, bytes: payloadBytes(env) },
            ...('holdsKey' in l && l.holdsKey ? { holdsKey: true } : {}),
          }),
          lease_expires_at: new Date(lease?.expiresAt ?? 0).toISOString(),
        };
      }),
      this.deps.counters.addStats(queue, { redelivered }),
    ]);
    return delivered;
  }

  /** Acks grouped by range: one write per range, entry by entry only when one of them is stale. */
  async ack(queue: string, config: QueueConfig, all: readonly { receipt: string; d: Delivery }[]) {
    const now = this.now();
    const deliveries = all.filter((x) => !x.d.held);
    const heldStatuses = await mapLimit(
      all.filter((x) => x.d.held),
      8,
      async (x) => [x.receipt, await this.deps.held.ack(queue, x.d)] as const,
    );
    const tombstone = retentionTtls(config, now).tombstoneTtl;
    const byRange = new Map<string, { receipt: string; d: Delivery }[]>();
    for (const x of deliveries) {
      const at = `${x.d.shard}\u0000${x.d.entry?.range}`;
      byRange.set(at, [...(byRange.get(at) ?? []), x]);
    }
    const statuses = new Map<string, AckStatus>(heldStatuses);
    let acked = 0;
    let bytes = 0;
    await mapLimit([...byRange.values()], 8, async (group) => {
      const first = group[0]?.d as Delivery;
      const range = { shard: first.shard, start: first.entry?.range as string };
      const indexes = [...new Set(group.map((x) => x.d.entry?.index as number))];
      // An ordered queue delivers an entry again in place: each ack names its delivery.
      const delivered = config.ordered
        ? new Map(group.map((x) => [x.d.entry?.index as number, x.d.deliveredAt]))
        : undefined;
      // The range as read before acking one by one: it tells the rest (acked before, or failed).
      const { newly, fresh } = (await this.deps.ranges.ack(queue, range, indexes, now, delivered))
        ? { newly: indexes, fresh: undefined }
        : await this.ackOneByOne(queue, range, indexes, now, delivered);
      for (const x of group) {
        const index = x.d.entry?.index as number;
        // Acked before (this ack sent again after its answer was lost); on an ordered queue, by
        // this delivery: an entry delivered again in place keeps only its last delivery's stamp.
        const before =
          fresh?.acked.has(index) === true &&
          (!config.ordered || fresh.leases.get(index)?.deliveredAt === x.d.deliveredAt);
        let ok = newly.includes(index) || before;
        // Finished in the range without an ack: its lease may have moved to the message's item.
        if (!ok && fresh?.failed.has(index)) {
          const outcome = await this.deps.messages.ack(queue, x.d.messageId, x.d, now, tombstone);
          ok = outcome.outcome !== 'stale';
          if (outcome.outcome === 'acked') {
            acked++;
            bytes += x.d.entry?.bytes ?? 0;
          }
          // An ordered queue's: acked in its range too (trace reads it there); its key was held
          // by it from the move on.
          if (ok && config.ordered) {
            await this.deps.ranges.ackHeld(queue, range, index, now);
            await this.releaseKey(queue, range, index, x.d.messageId);
          }
        } else if (ok && x.d.holdsKey && newly.includes(index))
          await this.releaseKey(queue, range, index, x.d.messageId);
        statuses.set(x.receipt, ok ? 'acked' : 'stale_receipt');
      }
      for (const index of newly) {
        acked++;
        bytes += group.find((x) => x.d.entry?.index === index)?.d.entry?.bytes ?? 0;
      }
    });
    const stale = [...statuses.values()].filter((s) => s === 'stale_receipt').length;
    await Promise.all([
      this.deps.counters.addStats(queue, { stale_receipts: stale }),
      this.deps.storage.release(queue, bytes, acked),
    ]);
    return statuses;
  }

  /** After a grouped ack failed: what of it is still live, each on its own, and the range read to know. */
  private async ackOneByOne(
    queue: string,
    range: { shard: string; start: string },
    indexes: number[],
    now: number,
    delivered: ReadonlyMap<number, number> | undefined,
  ): Promise<{ newly: number[]; fresh: Range | undefined }> {
    const fresh = await this.deps.ranges.get(queue, range.shard, range.start);
    if (!fresh) return { newly: [], fresh };
    const live = indexes.filter(
      (i) =>
        entryStatus(fresh, i, now) === 'leased' &&
        (delivered === undefined || fresh.leases.get(i)?.deliveredAt === delivered.get(i)),
    );
    if (live.length > 1 && (await this.deps.ranges.ack(queue, range, live, now, delivered)))
      return { newly: live, fresh };
    const one = await mapLimit(live, 8, async (i) =>
      (await this.deps.ranges.ack(queue, range, [i], now, delivered)) ? [i] : [],
    );
    return { newly: one.flat(), fresh };
  }

  /** The acked message held its key (store/key-states.ts `busy_with`): the key is free again. */
  private async releaseKey(
    queue: string,
    range: { shard: string; start: string },
    index: number,
    messageId: string,
  ): Promise<void> {
    const fresh = await this.deps.ranges.get(queue, range.shard, range.start);
    const key = fresh && (await this.deps.segments.entryAt(queue, fresh, index))?.envelope.key;
    if (key !== undefined) await this.deps.keys.release(queue, key, messageId);
  }

  /**
   * Gives back what was delivered to nobody (a long poll called off, a wake channel connection
   * gone): released, no attempt used. A receipt gone stale meanwhile was freed by its lease's end.
   */
  async giveBack(queue: string, config: QueueConfig, delivered: readonly DeliveredMessage[]): Promise<void> {
    const signer = await this.deps.signer();
    for (const { receipt } of delivered) {
      const d = signer.verify(receipt, queue);
      if (d?.entry) await this.nack(queue, config, d, { receipt, retryable: true, release: true });
    }
  }

  /** The failed attempt of a live delivery; undefined when the receipt is stale. */
  async nack(
    queue: string,
    config: QueueConfig,
    d: Delivery,
    req: NackRequest,
  ): Promise<{ outcome: Outcome; attempt: number } | undefined> {
    if (d.held) return this.deps.held.nack(queue, config, d, req);
    const found = await this.live(queue, d);
    if (!found) return undefined;
    const outcome = await this.deps.failures.fail(
      config,
      { queue, ...found },
      {
        reason: req.retryable ? 'nack' : 'non_retryable',
        lease: 'live',
        release: req.release,
        ...(req.error !== undefined ? { error: req.error } : {}),
        ...(req.retry_after_seconds !== undefined ? { retryAfterSeconds: req.retry_after_seconds } : {}),
      },
      this.now(),
    );
    return outcome && { outcome, attempt: found.envelope.attempt };
  }

  async extend(queue: string, d: Delivery, expiresAt: number): Promise<boolean> {
    if (d.held) return this.deps.held.extend(queue, d, expiresAt);
    const range = { shard: d.shard, start: d.entry?.range as string };
    const now = this.now();
    const index = d.entry?.index as number;
    if ((await this.deps.ranges.extend(queue, range, index, expiresAt, now, d.deliveredAt)) !== undefined)
      return true;
    // A lease the gap cap moved out of its range is extended in the message's item.
    return this.deps.messages.extend(queue, d.messageId, d, expiresAt, now);
  }

  /** The entry of a live delivery, with its envelope: in its range, or evicted to the message's item. */
  private async live(queue: string, d: Delivery) {
    const now = this.now();
    const range = await this.deps.ranges.get(queue, d.shard, d.entry?.range as string);
    const index = d.entry?.index as number;
    if (!range) return undefined;
    const status = entryStatus(range, index, now);
    const evicted =
      status === 'failed'
        ? await this.deps.messages.get(queue, d.messageId).then((item) => evictedLease(item, d, now))
        : undefined;
    const lease = evicted ?? (status === 'leased' ? range.leases.get(index) : undefined);
    // The entry delivered again since (in place, on an ordered queue): not this receipt's.
    if (!lease || lease.deliveredAt !== d.deliveredAt) return undefined;
    const entry = await this.deps.segments.entryAt(queue, range, index);
    if (!entry) return undefined;
    return {
      range,
      index,
      sequence: entry.sequence,
      envelope: entry.envelope,
      lease,
      evicted: evicted !== undefined,
    };
  }
}

/** The live lease of delivery `d` in the message's item, where the gap cap moved it. */
function evictedLease(item: StateItem | undefined, d: Delivery, now: number): Lease | undefined {
  if (item?.state !== 'leased' || item.shard !== d.shard || item.gen !== d.generation) return undefined;
  if ((item.lease_expires_at ?? 0) <= now) return undefined;
  return {
    expiresAt: item.lease_expires_at as number,
    deliveredAt: item.delivered_at ?? d.deliveredAt,
    ...(item.consumer_id !== undefined ? { consumerId: item.consumer_id } : {}),
  };
}
