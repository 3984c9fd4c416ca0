import { createHash } from 'node:crypto';
import type { PayloadRef } from './envelope.js';

/**
 * The lease layer over the log (docs/lease-layer.md): the rules, with no AWS in them. Per shard, the
 * admitted log entries are cut into ranges of contiguous entries. A range knows, per entry, its
 * lease (expiry, delivery time, consumer) and whether it finished (acked, or failed onto the retry
 * path). Every entry is leased at most once in its range: a retry re-enters the log as a new
 * entry, so the position of an entry names one delivery, and nothing turns an entry back from
 * leased to free (but a Lambda consumer giving back leases it never started: its namespace has no
 * pull receivers, which are what rely on this). A nacked entry whose retry is due soon waits in its
 * range (`retrying`: neither leasable nor finished) until the sweep appends its retry entry, whose
 * admission finishes it (`passedOn`). Two consequences the code relies on:
 * - below the lowest range with a free entry (the lease frontier) nothing is leasable, ever;
 * - below the lowest unfinished range (the commit point) everything is finished, for good.
 */

/** Entries per range: sized so a range with every entry leased stays under 1 KB (one write unit). */
export const RANGE_ENTRIES = 20;
/** Ranges a receive's look reads per shard: enough free entries for a receive of 100 behind a few busy ranges. */
export const RANGES_PER_LOOK = 8;

export interface Lease {
  expiresAt: number;
  deliveredAt: number;
  consumerId?: string;
  /** A Lambda consumer's lease: how often an invocation took it over from one that crashed with it. */
  takeovers?: number;
}

/**
 * A Lambda consumer's invocation that crashes or times out leaves its leases to the event source's
 * retry of the batch, which takes them over and delivers them again as the same attempt: most of
 * them never reached the handler. An entry taken over more often than this counts a failed attempt
 * instead, so a message that kills every invocation still reaches the DLQ.
 */
export const TAKEOVERS_PER_ATTEMPT = 2;

export function takenOverTooOften(lease: { takeovers?: number } | undefined): boolean {
  return (lease?.takeovers ?? 0) > TAKEOVERS_PER_ATTEMPT;
}

/** Where a range's envelopes are: an immutable segment written once per admitted batch. */
export interface SegmentRef {
  /** The segment's id: the sequence number of its first entry. */
  id: string;
  /** Index of the range's first entry in the segment. */
  offset: number;
  /** DynamoDB item (small) or S3 object (large): see SegmentStore. */
  store: 'ddb' | 's3';
}

/**
 * A nacked entry waiting in its range for its retry entry (see waitsInRange). The failed delivery
 * is in the message's history item, not here: a range stays under 1 KB with every entry waiting.
 */
export interface Retrying {
  dueAt: number;
  /** An ordered queue's entry retried in place: the attempt its next delivery is. */
  attempt?: number;
}

export interface Range {
  shard: string;
  /** Sequence number of the first entry: the range's name. */
  start: string;
  /** Sequence number of the last entry. */
  last: string;
  count: number;
  /** Entries admitted on the shard before this range: window arithmetic needs no counter. */
  base: number;
  /** The earliest enqueue time of its entries (ms). */
  enqueuedAt: number;
  segment: SegmentRef;
  leases: ReadonlyMap<number, Lease>;
  acked: ReadonlySet<number>;
  /** When the latest of its acks was written: an entry's own ack was at or before it. */
  ackedAt?: number;
  failed: ReadonlySet<number>;
  /**
   * An ordered pull queue's entries whose messages admission put in their key's hold area and
   * that are still to deliver from there (finished here from the start); each leaves the set when
   * its message is handled (acked or failed), so a hold item put back later finds it gone.
   */
  held: ReadonlySet<number>;
  /** Unfinished entries waiting for their retry entry. */
  retrying: ReadonlyMap<number, Retrying>;
  /** Finished entries whose retry entry was admitted: the mark admission left (passOnMark). */
  passedOn: ReadonlyMap<number, string>;
  /**
   * An ordered queue's entries delivered again where they are (a failed attempt waits in place,
   * so it stays first of its key): the attempt of the entry's current delivery.
   */
  attempts: ReadonlyMap<number, number>;
  /** An ordered queue's key tag of each entry (core/ordering.ts keyTag). */
  keys?: readonly string[];
}

export type EntryStatus = 'free' | 'leased' | 'expired' | 'retrying' | 'acked' | 'failed';

export function entryStatus(range: Range, index: number, now: number): EntryStatus {
  if (range.acked.has(index)) return 'acked';
  if (range.failed.has(index)) return 'failed';
  if (range.retrying.has(index)) return 'retrying';
  const lease = range.leases.get(index);
  if (!lease) return 'free';
  return lease.expiresAt > now ? 'leased' : 'expired';
}

export function freeEntries(range: Range): number[] {
  const out: number[] = [];
  for (let i = 0; i < range.count; i++)
    if (!range.leases.has(i) && !range.retrying.has(i) && !range.acked.has(i) && !range.failed.has(i))
      out.push(i);
  return out;
}

/** Entries acked or failed; a held entry is both once its message is handled (RangeStore.ackHeld). */
export function finishedCount(range: Range): number {
  let n = range.failed.size;
  for (const i of range.acked) if (!range.failed.has(i)) n++;
  return n;
}

export function isFinished(range: Range): boolean {
  return finishedCount(range) >= range.count;
}

/** Leases that ran out and were not finished yet: the sweep turns them into failed attempts. */
export function expiredEntries(range: Range, now: number): number[] {
  return [...range.leases.keys()].filter((i) => entryStatus(range, i, now) === 'expired');
}

/** Entries admitted on a shard: what follows the last range. */
export function admittedTotal(head: Range | undefined): number {
  return head ? head.base + head.count : 0;
}

/**
 * The window (head − commit point): entries from the lowest unfinished range to the head,
 * finished ones above the commit point included, as docs/contract.md, "The lease layer", counts it.
 */
export function windowSize(head: Range | undefined, lowestOpen: Range | undefined): number {
  if (!head || !lowestOpen) return 0;
  return admittedTotal(head) - lowestOpen.base;
}

/**
 * The gap cap: a live lease further than this below its shard's head holds the commit point, and
 * with it the window, for its whole lease; past it the lease moves out of its range (docs/lease-layer.md,
 * "The gap cap": one slow message never stops a shard). Half the window: the other half keeps flowing.
 */
export function gapCap(config: { window_size: number }): number {
  return Math.max(1, Math.floor(config.window_size / 2));
}

/**
 * How long a lease is held before the gap cap counts it slow: behind a full window every lease
 * sits a window below the head, and moving leases a few hundred ms old out of their ranges only
 * costs writes (and races their acks); a slow one is still moved within seconds.
 */
export function slowLeaseMs(config: { lease_seconds: number }): number {
  return Math.min(5000, config.lease_seconds * 500);
}

/**
 * Live leases held at least `minHeldMs` of entries more than `cap` entries below the head of
 * `ranges` (oldest first).
 */
export function stuckEntries(
  ranges: readonly Range[],
  cap: number,
  now: number,
  minHeldMs: number,
): { range: Range; index: number }[] {
  const limit = admittedTotal(ranges.at(-1)) - cap;
  return ranges.flatMap((range) =>
    [...range.leases]
      .filter(
        ([index, lease]) =>
          range.base + index < limit &&
          now - lease.deliveredAt >= minHeldMs &&
          entryStatus(range, index, now) === 'leased',
      )
      .map(([index]) => ({ range, index })),
  );
}

/**
 * Whether a nacked entry waits in its range for its retry instead of moving to the delay store:
 * on an unordered pull queue, when the retry is due no later than a lease could have held the
 * entry anyway; on an ordered one always, where it is delivered again in place, first of its key
 * (the gap cap moves a long wait out: stuckRetries). The delay store costs an item and its index
 * going in and out (~5 write units a failed attempt); waiting costs the range one write and the
 * retry's admission a share of one.
 */
export function waitsInRange(
  config: { ordered: boolean; lease_seconds: number },
  dueAt: number,
  now: number,
): boolean {
  return config.ordered || dueAt - now <= config.lease_seconds * 1000;
}

/** Entries whose retry is due: the sweep appends their retry entries. */
export function dueRetries(range: Range, now: number): number[] {
  return [...range.retrying].filter(([, r]) => r.dueAt <= now).map(([index]) => index);
}

/**
 * Waiting retries further than `cap` below the head: like a stuck lease, they would hold the
 * commit point, and a full window would keep their retry entries out of the ranges for good.
 */
export function stuckRetries(ranges: readonly Range[], cap: number): { range: Range; index: number }[] {
  const limit = admittedTotal(ranges.at(-1)) - cap;
  return ranges.flatMap((range) =>
    [...range.retrying.keys()]
      .filter((index) => range.base + index < limit)
      .map((index) => ({ range, index })),
  );
}

/**
 * What admission writes on an entry whose retry entry it admitted (at `sequence`, appended at
 * `appendedAt`): a short hash names the copy (a second copy of the same retry is passed over), the
 * time says where trace looks for it in the log.
 */
export function passOnMark(appendedAt: number, sequence: string): string {
  const seconds = Math.floor(appendedAt / 1000).toString(36);
  return `p${seconds}.${createHash('sha256').update(sequence).digest('base64url').slice(0, 6)}`;
}

/** The time of a pass-on mark (to the second), and whether `sequence` is the copy it names. */
export function readPassOnMark(mark: string): { appendedAt: number; names: (sequence: string) => boolean } {
  const appendedAt = Number.parseInt(mark.slice(1).split('.')[0] ?? '', 36) * 1000;
  return { appendedAt, names: (sequence) => passOnMark(appendedAt, sequence) === mark };
}

/**
 * Where an entry's payload is: the entry itself, or the entry a retry's entry points to (`ref`:
 * never a chain, so a payload is always read from the message's first entry).
 */
export function payloadSource(range: Range, index: number, ref: PayloadRef | undefined): PayloadRef {
  return (
    ref ?? {
      shard: range.shard,
      id: range.segment.id,
      store: range.segment.store,
      index: range.segment.offset + index,
    }
  );
}

/** Sizes of the ranges a batch of `n` admitted entries is cut into. */
export function rangeSizes(n: number, per = RANGE_ENTRIES): number[] {
  const sizes: number[] = [];
  for (let left = n; left > 0; left -= per) sizes.push(Math.min(per, left));
  return sizes;
}

export interface Pick {
  range: Range;
  indexes: number[];
}

/**
 * What a receiver leases: up to `want` free entries, in as few ranges as it can (a lease write,
 * and later its ack, costs a unit per range). Receivers reading the same ranges at once must
 * mostly take different entries: the receiver starts at a random free entry of all of them, takes
 * `want` from there on in that range (round to its start), then from the ranges after it. Two
 * receivers' picks are the same only when they drew the same entry; where they overlap, the lease
 * write (RangeStore.leaseFree) gives the later one what the earlier did not take. Grouped by
 * range: one write each.
 */
export function pickEntries(
  ranges: readonly Range[],
  want: number,
  random: () => number = Math.random,
): Pick[] {
  const open = ranges.map((range) => ({ range, free: freeEntries(range) })).filter((r) => r.free.length > 0);
  if (!open.length || want <= 0) return [];
  const starts = open.flatMap((r, k) => r.free.map((_, offset) => ({ k, offset })));
  const first = starts[Math.floor(random() * starts.length)] as { k: number; offset: number };
  const picks: Pick[] = [];
  let left = want;
  for (let step = 0; step < open.length && left > 0; step++) {
    const { range, free } = open[(first.k + step) % open.length] as { range: Range; free: number[] };
    // The first range from the drawn entry on, round to its start; every later one from its start.
    const from = step === 0 ? first.offset : 0;
    const indexes = [...free.slice(from), ...free.slice(0, from)].slice(0, left);
    picks.push({ range, indexes: indexes.sort((x, y) => x - y) });
    left -= indexes.length;
  }
  return picks;
}

/**
 * The free entries of `ranges` shared out in order to receivers woken together, `wants[i]` to the
 * i-th (fewer when they run out): disjoint picks, so none of them writes for another's entries.
 */
export function shareEntries(ranges: readonly Range[], wants: readonly number[]): Pick[][] {
  const free = ranges.flatMap((range, slot) =>
    freeEntries(range).map((index) => ({ slot, index, bytes: 0 })),
  );
  return dealOffers(
    free,
    wants.map((want) => ({ wants: want, maxBytes: Number.POSITIVE_INFINITY })),
  ).map((dealt) => {
    const share: Pick[] = [];
    for (const { slot, index } of dealt) {
      const range = ranges[slot] as Range;
      const last = share.at(-1);
      if (last && last.range === range) last.indexes.push(index);
      else share.push({ range, indexes: [index] });
    }
    return share;
  });
}

/** A free entry an admission offers to the receivers waiting for it, by the range it is cut into. */
export interface Offer {
  /** Which of the admission's new ranges, in order. */
  slot: number;
  index: number;
  /** Its payload's size: a receive's answer has a byte budget. */
  bytes: number;
  /**
   * An ordered queue's key run it belongs to (offered together, in order): a run goes to one
   * receiver or is cut there, never shared, so a key is never in flight at two receivers.
   */
  run?: number;
}

/**
 * `offers` dealt out in order to `takers` (oldest waiter first): each takes up to `wants` entries
 * and `maxBytes` of payload, its first entry whatever its size, as a receive answers; the next
 * takes on from there. Disjoint, so no two receivers get one entry; what a receiver leaves of a
 * run is left to the receivers' next look.
 */
export function dealOffers(
  offers: readonly Offer[],
  takers: readonly { wants: number; maxBytes: number }[],
): Offer[][] {
  let at = 0;
  return takers.map(({ wants, maxBytes }) => {
    const dealt: Offer[] = [];
    let budget = maxBytes;
    for (; at < offers.length && dealt.length < wants; at++) {
      const offer = offers[at] as Offer;
      if (dealt.length && offer.bytes > budget) break;
      budget -= offer.bytes;
      dealt.push(offer);
    }
    const cut = dealt.at(-1)?.run;
    while (cut !== undefined && offers[at]?.run === cut) at++;
    return dealt;
  });
}

/** The lowest range that still has a free entry, or past the last one read when none has. */
export function leaseFrontier(ranges: readonly Range[]): string | undefined {
  return (ranges.find((r) => freeEntries(r).length > 0) ?? ranges.at(-1))?.start;
}

/** A short tag that stands for a consumer id inside a range item (the id is kept once per range). */
export function consumerTag(consumerId: string): string {
  return createHash('sha256').update(consumerId).digest('base64url').slice(0, 6);
}

/** Sequence numbers compare as numbers: they grow with gaps and their width is not fixed. */
export function compareSequence(a: string, b: string): number {
  return a.length === b.length ? (a < b ? -1 : a > b ? 1 : 0) : a.length - b.length;
}

/** `range` with `lease` written on `indexes`: what a lease write made of the range it read. */
export function withLeases(range: Range, indexes: readonly number[], lease: Lease): Range {
  const leases = new Map(range.leases);
  for (const index of indexes) leases.set(index, lease);
  return { ...range, leases };
}
