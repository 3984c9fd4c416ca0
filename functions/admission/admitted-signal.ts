import { dealOffers, type Lease, type Offer, type Pick, type Range, shareEntries } from '../core/ranges.js';
import type { SegmentEntry } from '../store/segments.js';

/** What a waiting receive asks of an admission: how much, and the lease it would write. */
export interface LeaseTerms {
  wants: number;
  /** The receive's answer's payload budget (its first message whatever its size). */
  maxBytes: number;
  /** The lease this receive writes when it takes an entry at `now`. */
  lease: (now: number) => Lease;
}

/** An entry leased to a receiver, with its range as written. */
export interface LeasedEntry {
  range: Range;
  index: number;
  entry: SegmentEntry;
}

/**
 * What a woken receiver got: entries its admission leased to it as it created their ranges, and
 * free entries of the new ranges for it to lease (the share); both empty when it should look.
 */
export interface Handoff {
  leased: readonly LeasedEntry[];
  share: readonly Pick[];
}

export const NOTHING_HANDED: Handoff = { leased: [], share: [] };

/** An admission's claim on waiting receivers, settled once its ranges are written. */
export interface Reservation {
  /** The leases to create a new range (`slot`, in the admission's order) with, by entry index. */
  leases(slot: number): ReadonlyMap<number, Lease>;
  /**
   * Hands each reserved receiver what of its entries was written (`written[slot]`: the range as
   * written, undefined when it was not); one whose ranges were not is woken to look.
   */
  settle(
    written: readonly (Range | undefined)[],
    entryOf: (slot: number, index: number) => SegmentEntry,
  ): void;
  /** Entries given to receivers (leased where their range was written). */
  readonly count: number;
}

interface Waiter {
  terms: LeaseTerms;
  wake: (handoff: Handoff) => void;
  timer?: ReturnType<typeof setTimeout>;
}

/**
 * Long polls waiting in this process for admission to write ranges of their queue, so a receiver
 * gets new work within milliseconds instead of at its next re-read. An admission that finds
 * receivers waiting leases its new entries to them in the write that creates their ranges
 * (`reserve`): a woken receiver answers without a write of its own, a round trip and a unit less.
 * What is left free it hands out as shares (`notify`), each receiver woken its own, leased
 * without reading it back. It helps where admission and receivers share a process: the local
 * runtime. A Lambda instance serves one request at a time, so on AWS nothing waits here and
 * receivers re-read (delivery/pull-delivery.ts).
 */
export class AdmittedSignal {
  /** Per queue, the waiters, oldest first. */
  private readonly waiting = new Map<string, Set<Waiter>>();
  /** Per queue, admissions notified so far: what a look that ran during one has missed. */
  private readonly admissions = new Map<string, number>();

  /** Whether a receiver of the queue waits here now. */
  waits(queue: string): boolean {
    return (this.waiting.get(queue)?.size ?? 0) > 0;
  }

  /** Taken before a look, passed to `wait` after it: an admission during the look is not missed. */
  seen(queue: string): number {
    return this.admissions.get(queue) ?? 0;
  }

  /**
   * Takes the oldest waiters for `offers` (an admission's free entries, in order), each what its
   * terms ask for; they wait for `settle`, not for their time, which a range write bounds.
   * Undefined when nobody waits.
   */
  reserve(queue: string, offers: readonly Offer[], now: number): Reservation | undefined {
    const waiters = [...(this.waiting.get(queue) ?? [])];
    if (!waiters.length || !offers.length) return undefined;
    const dealt = dealOffers(
      offers,
      waiters.map((w) => w.terms),
    );
    const taken = waiters.flatMap((waiter, i) => {
      const offered = dealt[i] ?? [];
      if (!offered.length) return [];
      // Its leases are being written: it must not time out before they are handed to it.
      clearTimeout(waiter.timer);
      this.leave(queue, waiter);
      return [{ waiter, offered, lease: waiter.terms.lease(now) }];
    });
    const bySlot = new Map<number, Map<number, Lease>>();
    for (const { offered, lease } of taken)
      for (const { slot, index } of offered) {
        const leases = bySlot.get(slot) ?? new Map<number, Lease>();
        leases.set(index, lease);
        bySlot.set(slot, leases);
      }
    return {
      count: taken.reduce((n, t) => n + t.offered.length, 0),
      leases: (slot) => bySlot.get(slot) ?? new Map(),
      settle: (written, entryOf) => {
        for (const { waiter, offered } of taken)
          waiter.wake({
            leased: offered.flatMap(({ slot, index }) => {
              const range = written[slot];
              return range ? [{ range, index, entry: entryOf(slot, index) }] : [];
            }),
            share: [],
          });
      },
    };
  }

  /**
   * `entries` new ones left free: wakes the oldest waiters until what they ask for covers them, not a
   * stampede: every extra receiver woken for the same entries races for them and loses a write.
   */
  notify(queue: string, entries: number, ranges: readonly Range[] = []): void {
    this.admissions.set(queue, this.seen(queue) + 1);
    const waiters = this.waiting.get(queue);
    if (!waiters || entries <= 0) return;
    let left = entries;
    const woken: Waiter[] = [];
    for (const waiter of waiters) {
      if (left <= 0) break;
      left -= waiter.terms.wants;
      woken.push(waiter);
    }
    const shares = shareEntries(
      ranges,
      woken.map((w) => w.terms.wants),
    );
    for (const [i, waiter] of woken.entries()) {
      this.leave(queue, waiter);
      waiter.wake({ leased: [], share: shares[i] ?? [] });
    }
  }

  /**
   * Resolves on an admission meant for this waiter with what it was handed, or after `ms` with
   * nothing; at once, with nothing, if one came since `since` (`seen` before its look).
   */
  wait(queue: string, since: number, terms: LeaseTerms, ms: number): Promise<Handoff> {
    return new Promise((resolve) => {
      if (this.seen(queue) > since) return resolve(NOTHING_HANDED);
      const waiters = this.waiting.get(queue) ?? new Set<Waiter>();
      this.waiting.set(queue, waiters);
      const waiter: Waiter = {
        terms: { ...terms, wants: Math.max(1, terms.wants) },
        wake: (handoff) => {
          clearTimeout(waiter.timer);
          resolve(handoff);
        },
      };
      waiter.timer = setTimeout(() => {
        this.leave(queue, waiter);
        resolve(NOTHING_HANDED);
      }, ms);
      waiters.add(waiter);
    });
  }

  private leave(queue: string, waiter: Waiter): void {
    const waiters = this.waiting.get(queue);
    waiters?.delete(waiter);
    if (waiters && !waiters.size) this.waiting.delete(queue);
  }
}

/**
 * The process's one signal: admission and the long polls it wakes are built by different handler
 * factories (dispatch, api) that share only the process. Keys name the table as well as the
 * queue, so runtimes sharing a process (tests) wake only their own receivers.
 */
export const processAdmissions = new AdmittedSignal();
