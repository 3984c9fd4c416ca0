import { mapLimit, sleep } from '../core/async.js';
import { isNamespace, keyOrdered, namespaceParts, type QueueConfig } from '../core/config.js';
import { decodeEnvelope, type Envelope, payloadBytes } from '../core/envelope.js';
import { admittedRuns, keyTag } from '../core/ordering.js';
import {
  admittedTotal,
  compareSequence,
  isFinished,
  type Offer,
  passOnMark,
  RANGE_ENTRIES,
  type Range,
  rangeSizes,
  type SegmentRef,
  windowSize,
} from '../core/ranges.js';
import { admissionId, producerMarksBy } from '../core/replay-policy.js';
import { retentionTtls } from '../core/retention.js';
import type { OrderedLook } from '../delivery/ordered-look.js';
import type { WakeChannel } from '../delivery/wake-channel.js';
import type { DedupStore } from '../store/dedup.js';
import type { MessageStore } from '../store/messages.js';
import { type NewEntries, type NewRange, type RangeStore, rangeAsCreated } from '../store/ranges.js';
import type { SegmentEntry, SegmentStore } from '../store/segments.js';
import type { StreamMarks } from '../store/stream-marks.js';
import type { Reservation } from './admitted-signal.js';

/**
 * Admission into the lease layer: a shard's new log entries become one immutable segment and a
 * few ranges after the shard's last one. Exactly once per entry, whoever calls (dispatch, and
 * produce's fast path: fast-admission.ts), because every caller offers a gapless run of the log
 * that starts right after the shard's last range (read consistently), a range is written with a
 * conditional put, and a caller whose range lost that put stops there: the winner's range starts
 * where the loser's would have, so what the loser did not write is past the new last range, and
 * the next caller admits it. Segments carry an id of their own (not only the first entry's
 * sequence number), so two callers' segments of one run never overwrite each other.
 * Which copies are admitted: a server-assigned id was appended once, so its entry is admitted as
 * it is; a producer's id at the position its dedup record names (a replay's copy likewise, under
 * an id of its own per replay); a retry's next entry once per
 * entry number (its message item says so).
 * `queue` is a queue or a Lambda consumer's namespace (push-consumer.ts admits its batches here):
 * the message state is the namespace's, the producer's dedup record its queue's, so every reader
 * of a queue admits the same copy of a producer's id.
 */

export interface RangeAdmissionDeps {
  ranges: RangeStore;
  /** Which stream each shard's ranges are of: a queue moved to another stream is refused, not misread. */
  streamMarks: Pick<StreamMarks, 'confirm'>;
  segments: SegmentStore;
  messages: MessageStore;
  dedup: DedupStore;
  /** Long polls of this process waiting for new ranges: leased entries as they are created, or woken. */
  waiters?: AdmissionWaiters;
  /** Receivers waiting on the wake channel, in any instance (delivery/wake-channel.ts). */
  wakes?: Pick<WakeChannel, 'admitted'>;
  /** Ordered pull queues: a shard's window and blocked keys, read to lease free keys' runs at creation. */
  windows?: Pick<OrderedLook, 'window'>;
  /** How long a batch waits for a full window to free room before it gives up. */
  windowWaitMs?: number;
  now?: () => number;
}

/** An AdmittedSignal (admitted-signal.ts) for this table's queues. */
export interface AdmissionWaiters {
  /** Whether a receiver of the queue waits now. */
  waits(queue: string): boolean;
  reserve(queue: string, offers: readonly Offer[], now: number): Reservation | undefined;
  notify(queue: string, entries: number, ranges: readonly Range[]): void;
}

export interface AdmitOptions {
  /** Wait for a full window to free some room (dispatch), or take what room there is now. */
  waitForRoom?: boolean;
}

export interface CatchUpOptions extends AdmitOptions {
  /**
   * Where the shard's last range likely ends (the caller's previous read of the log ended
   * there): the log is read from it while the last range is, one round trip instead of two, and
   * read again from the range's end only when that guess was past it.
   */
  guess?: string;
}

/** An ordered shard's window (its ranges from the lowest unfinished one on) and blocked key tags. */
type ShardWindow = { ranges: Range[]; blocked: Set<string> };

/** A new range and how its entries start. */
interface SlotRange {
  range: NewRange;
  entries: Omit<NewEntries, 'leases'>;
}

interface Layout {
  entries: SegmentEntry[];
  ranges: { offset: number; count: number; base: number; slice: SegmentEntry[]; keys?: string[] }[];
}

export interface LogRecord {
  sequence: string;
  envelope: Envelope;
}

/**
 * How many ranges one look for the commit point reads at a time: first a few (it is usually the
 * hint's range, and behind a backlog a long page would read ranges nobody touched), then more.
 */
const COMMIT_FIRST_PAGE = 4;
const COMMIT_PAGE = 50;
/**
 * The longest window an ordered admission reads to lease to waiting receivers: receivers wait
 * when they keep up, and then the window is a few ranges.
 */
const ORDERED_WINDOW_RANGES = 16;
const WINDOW_POLL_MS = 100;

export class RangeAdmission {
  /** Per shard, the entries admitted below the lowest unfinished range when last read. */
  private readonly commitSeen = new Map<string, number>();

  constructor(private readonly deps: RangeAdmissionDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /**
   * Admits records of one shard, in log order. Answers how many of them are done with (a prefix):
   * the rest did not fit the window and must be offered again.
   */
  async admit(
    queue: string,
    config: QueueConfig,
    shard: string,
    offered: readonly LogRecord[],
    options: AdmitOptions = {},
  ): Promise<number> {
    const window = offered.length ? this.orderedWindow(queue, config, shard) : Promise.resolve(undefined);
    const head = await this.deps.ranges.head(queue, shard);
    return this.admitAfter(queue, config, shard, head, offered, options, window);
  }

  /**
   * Admits what the log holds after the shard's last range, as `read` answers it (a gapless run
   * from just after `after`, the whole shard when undefined). Answers how many records it read,
   * and how many of them are done with (a prefix; the rest did not fit the window).
   */
  async catchUp(
    queue: string,
    config: QueueConfig,
    shard: string,
    read: (after: string | undefined) => Promise<LogRecord[]>,
    options: CatchUpOptions = {},
  ): Promise<{ read: number; taken: number }> {
    const { guess } = options;
    const window = this.orderedWindow(queue, config, shard);
    const [head, early] = await Promise.all([
      this.deps.ranges.head(queue, shard),
      guess === undefined ? undefined : read(guess),
    ]);
    // Read from at or before the range's end: gapless after it (admitAfter drops what it covers),
    // unless all of the queue's records it got are at or before that end: a guess far behind the
    // range (an iterator kept from long ago) reads a page of what is admitted already.
    const gapless =
      early &&
      guess !== undefined &&
      head &&
      compareSequence(guess, head.last) <= 0 &&
      early.some((r) => compareSequence(r.sequence, head.last) > 0);
    const records = gapless ? early : await read(head?.last);
    const taken = records.length
      ? await this.admitAfter(queue, config, shard, head, records, options, window)
      : 0;
    return { read: records.length, taken };
  }

  /** How many more entries the shard's window takes now, without waiting for room. */
  async room(queue: string, config: QueueConfig, shard: string): Promise<number> {
    const head = await this.deps.ranges.head(queue, shard);
    return this.freeRoom(queue, shard, config.window_size, head, config.window_size, 0);
  }

  /**
   * An ordered queue's receivers waiting here are leased free keys' runs as their ranges are
   * created, which needs the shard's window and blocked keys: read beside the shard's last range
   * and the log (catchUp's callers have just appended), and used only if it ends at that range.
   */
  private orderedWindow(queue: string, config: QueueConfig, shard: string): Promise<ShardWindow | undefined> {
    if (!keyOrdered(queue, config) || !this.deps.waiters?.waits(queue) || !this.deps.windows)
      return Promise.resolve(undefined);
    return this.deps.windows
      .window(queue, config.stream, shard, ORDERED_WINDOW_RANGES, this.now())
      .catch(() => undefined);
  }

  private async admitAfter(
    queue: string,
    config: QueueConfig,
    shard: string,
    head: Range | undefined,
    offered: readonly LogRecord[],
    options: AdmitOptions,
    window: Promise<ShardWindow | undefined>,
  ): Promise<number> {
    await this.deps.streamMarks.confirm(queue, shard, config.stream, head !== undefined);
    // A record belongs to the queue; its state here to the namespace.
    const records = offered.map((r) => ({ ...r, envelope: { ...r.envelope, queue } }));
    const fresh = records.filter((r) => !head || compareSequence(r.sequence, head.last) > 0);
    const skipped = records.length - fresh.length;
    const now = this.now();
    const due = (r: LogRecord) => !r.envelope.deliver_after || Date.parse(r.envelope.deliver_after) <= now;
    const wanted = fresh.filter(due).length;
    const waitMs = options.waitForRoom === false ? 0 : (this.deps.windowWaitMs ?? 1000);
    let free = wanted ? await this.freeRoom(queue, shard, config.window_size, head, wanted, waitMs) : 0;
    let cut = fresh.length;
    for (let i = 0; i < fresh.length; i++) {
      if (!due(fresh[i] as LogRecord)) continue;
      if (free <= 0) {
        cut = i;
        break;
      }
      free--;
    }
    const batch = fresh.slice(0, cut);
    const { bodyTtl } = retentionTtls(config, now);
    // A pull queue's shards are admitted by dispatch and produce alike; a namespace is its Lambda
    // consumer's alone.
    const stopOnLoss = !isNamespace(queue) && config.consumers.length === 0;
    if (!batch.length) return skipped + cut;
    // An ordered pull queue's entries carry their keys' tags; one produced with a delay waits in
    // its range until its time, first of its key, so the key's later messages wait behind it.
    const ordered = keyOrdered(queue, config);
    const layout = this.layout(head, batch, ordered);
    const [segment, admitted, view] = await Promise.all([
      this.putSegment(queue, shard, layout, bodyTtl),
      (async () => {
        // Not yet due (produce's delay_seconds), unordered: the delay store keeps it; it comes
        // back as its next entry.
        if (!ordered)
          await mapLimit(
            batch.filter((r) => !due(r)),
            16,
            (r) => this.deps.messages.delay(shard, r.sequence, r.envelope, bodyTtl),
          );
        return new Set(
          await this.identities(
            queue,
            config,
            shard,
            batch.filter((r) => ordered || due(r)),
            now,
          ),
        );
      })(),
      window,
    ]);
    // Every record of the batch enters the ranges, what is not delivered from here (a delayed
    // entry, a copy passed over) finished at once: the shard's last range then covers all it
    // read, so a caller that reads the log after it (produce's fast admission) never offers
    // those again, to admit a delayed entry once it is due while its retry entry comes too.
    const finished = new Set(batch.filter((r) => !admitted.has(r)).map((r) => r.sequence));
    const waiting = new Map(
      batch
        .filter((r) => ordered && admitted.has(r) && !due(r))
        .map((r) => [r.sequence, Date.parse(r.envelope.deliver_after as string)] as const),
    );
    const slots = layout.ranges.map((slot) => this.slotRange(shard, slot, segment, finished, waiting));
    // The window read beside the last range is used only if it ends there (nothing was missed).
    const whole = view && view.ranges.at(-1)?.start === head?.start ? view : undefined;
    const reservation = !ordered
      ? this.reserve(queue, layout, finished)
      : whole && this.reserveRuns(queue, config, layout, slots, whole);
    if (!(await this.write(queue, config, layout, slots, bodyTtl, stopOnLoss, reservation, !ordered)))
      return this.doneAfterLostRace(queue, shard, records);
    return skipped + cut;
  }

  /**
   * The run's segment, written while its entries are decided (dedup claims, keys): nothing
   * reads it before a range names it, and a try that stops before its ranges leaves it to expire.
   */
  private putSegment(queue: string, shard: string, layout: Layout, ttl: number) {
    return this.deps.segments.put(queue, shard, layout.entries, ttl);
  }

  /** Another caller wrote a range this one meant to: done with what is behind the new last range. */
  private async doneAfterLostRace(
    queue: string,
    shard: string,
    records: readonly LogRecord[],
  ): Promise<number> {
    const head = await this.deps.ranges.head(queue, shard);
    return head ? records.filter((r) => compareSequence(r.sequence, head.last) <= 0).length : 0;
  }

  /** The copies that are their message's admitted entry. */
  private async identities(
    queue: string,
    config: QueueConfig,
    shard: string,
    records: LogRecord[],
    now: number,
  ): Promise<LogRecord[]> {
    const producerIds = records.filter(
      (r) => r.envelope.entry === 1 && admissionId(r.envelope) !== undefined,
    );
    const claims = await this.deps.dedup.claimPositions(
      namespaceParts(queue).queue,
      producerIds.map((r) => ({
        messageId: admissionId(r.envelope) as string,
        record: { shard, sequence: r.sequence, acceptedAt: now },
        markedBy: producerMarksBy(r.envelope),
      })),
      config.dedup_window_seconds,
    );
    const passedOver = new Set(producerIds.filter((_, i) => !claims[i]));
    // A retry of an entry that waited in its range: the copy that finishes that entry is it.
    const passedOn = await this.passOn(
      queue,
      records.filter((r) => r.envelope.from),
    );
    // A retry's entry from the delay store: the sweep marked its message `ranged` where it landed,
    // so a read tells whether this copy is it; only an entry whose mark is not there yet (a crash,
    // or a read that lags) needs the conditional write.
    const retries = records.filter((r) => r.envelope.entry > 1 && !r.envelope.from);
    const items = await this.deps.messages.getMany(
      queue,
      retries.map((r) => r.envelope.message_id),
    );
    const keep = await mapLimit(records, 16, async (r) => {
      if (passedOver.has(r)) return false;
      if (r.envelope.from) return passedOn.has(r);
      if (r.envelope.entry === 1) return true;
      const item = items.get(r.envelope.message_id);
      if (item?.state === 'ranged' && item.entry === r.envelope.entry && item.shard === shard)
        return item.seq === r.sequence;
      if (item && item.entry > r.envelope.entry) return false;
      return this.deps.messages.enterRange(shard, r.sequence, r.envelope);
    });
    return records.filter((_, i) => keep[i]);
  }

  /**
   * Retry entries of entries that waited in their ranges: each finishes its entry with its mark,
   * before it is written into a range (a crash in between: the batch offered again finds its own
   * mark). A second copy of one retry (the sweep appended it again) finds another's and is passed
   * over; so is one whose entry the gap cap moved to the delay store.
   */
  private async passOn(queue: string, records: LogRecord[]): Promise<Set<LogRecord>> {
    const passed = new Set<LogRecord>();
    const byRange = new Map<
      string,
      { origin: { shard: string; start: string }; copies: Map<number, LogRecord> }
    >();
    for (const r of records) {
      const from = r.envelope.from;
      if (!from) continue;
      const name = `${from.shard}\u0000${from.range}`;
      const group = byRange.get(name) ?? {
        origin: { shard: from.shard, start: from.range },
        copies: new Map(),
      };
      // Two copies in one batch: the first is the one.
      if (!group.copies.has(from.index)) group.copies.set(from.index, r);
      byRange.set(name, group);
    }
    const marks = (copies: [number, LogRecord][]) =>
      copies.map(([index, r]) => ({
        index,
        mark: passOnMark(Date.parse(r.envelope.enqueued_at), r.sequence),
      }));
    await mapLimit([...byRange.values()], 8, async ({ origin, copies }) => {
      const all = [...copies];
      if (await this.deps.ranges.passOn(queue, origin, marks(all))) {
        for (const [, r] of all) passed.add(r);
        return;
      }
      // One of them is not the copy that finishes its entry: one at a time.
      for (const copy of all)
        if (await this.deps.ranges.passOn(queue, origin, marks([copy]))) passed.add(copy[1]);
    });
    return passed;
  }

  /**
   * How a run of the log (every record after the shard's head, none left out) is cut into ranges,
   * and each entry's place in the shard's admission order, the same whoever cuts the run.
   */
  private layout(head: Range | undefined, records: LogRecord[], keyed: boolean): Layout {
    const entries: SegmentEntry[] = records.map((r) => ({ sequence: r.sequence, envelope: r.envelope }));
    const first = admittedTotal(head);
    const ranges: Layout['ranges'] = [];
    let offset = 0;
    for (const count of rangeSizes(entries.length)) {
      const slice = entries.slice(offset, offset + count);
      ranges.push({
        offset,
        count,
        base: first + offset,
        slice,
        ...(keyed ? { keys: slice.map((e) => keyTag(e.envelope.key ?? '')) } : {}),
      });
      offset += count;
    }
    return { entries, ranges };
  }

  /**
   * The ranges that point into the run's segment (written first). A put whose condition failed may be
   * this write's own (a try that landed, then its retry): the range names this write's segment.
   * A range another caller wrote ends the layout here when several callers admit the shard
   * (`stopOnLoss`: a pull queue, which produce admits too; the next caller admits the rest from
   * the new last range). A Lambda
   * consumer's namespace has one admitter, which goes on with its layout: offered again, it cuts
   * the same ranges from the same last range (a crashed try wrote the first ones).
   */
  private async write(
    queue: string,
    config: QueueConfig,
    layout: Layout,
    slots: readonly SlotRange[],
    ttl: number,
    stopOnLoss: boolean,
    /** Waiting receivers' leases, written with the ranges. */
    reservation: Reservation | undefined,
    /** Hand waiting receivers shares of what is left free; an ordered queue's are woken to look. */
    share: boolean,
  ): Promise<boolean> {
    let written = 0;
    const fresh: Range[] = [];
    const ours: (Range | undefined)[] = [];
    try {
      for (const [slot, { range: newRange, entries }] of slots.entries()) {
        const created = await this.deps.ranges.create(queue, newRange, ttl, {
          ...entries,
          ...(reservation ? { leases: reservation.leases(slot) } : {}),
        });
        // Its leases are the reservation's when the range is this write's (one that landed, then its retry).
        const range =
          created ??
          (await this.deps.ranges
            .get(queue, newRange.shard, newRange.start)
            .then((r) => (r?.segment.id === newRange.segment.id ? r : undefined)));
        if (!range && stopOnLoss) break;
        if (range) written += newRange.count;
        if (created) fresh.push(created);
        ours[slot] = range;
      }
    } finally {
      reservation?.settle(ours, (slot, index) => layout.ranges[slot]?.slice[index] as SegmentEntry);
    }
    const free = written - (reservation?.count ?? 0);
    if (written) this.deps.waiters?.notify(queue, free, share ? fresh : []);
    if (free > 0) await this.deps.wakes?.admitted(queue, config, free, share ? fresh : []);
    return !stopOnLoss || written === layout.entries.length;
  }

  /** A slot of the layout as the range to create: where it points, and how its entries start. */
  private slotRange(
    shard: string,
    { offset, count, base, slice, keys }: Layout['ranges'][number],
    segment: Pick<SegmentRef, 'id' | 'store'>,
    /** Entries that enter their range finished: delayed, passed over. */
    finished: ReadonlySet<string>,
    /** An ordered queue's entries that wait in their range until their time (by sequence). */
    waiting: ReadonlyMap<string, number>,
  ): SlotRange {
    return {
      range: {
        shard,
        start: (slice[0] as SegmentEntry).sequence,
        last: (slice.at(-1) as SegmentEntry).sequence,
        count,
        base,
        enqueuedAt: Math.min(...slice.map((e) => Date.parse(e.envelope.enqueued_at))),
        segment: { ...segment, offset },
        ...(keys ? { keys } : {}),
      },
      entries: {
        finished: indexesIn(slice, finished),
        waiting: new Map(
          slice.flatMap((e, index) => {
            const dueAt = waiting.get(e.sequence);
            return dueAt === undefined ? [] : [[index, dueAt] as const];
          }),
        ),
      },
    };
  }

  /**
   * An ordered queue's runs of free keys in the new ranges (ordering.ts admittedRuns: nothing of
   * the key unfinished in the window, the key not blocked) offered to the receivers waiting here,
   * each run whole to one of them: the key's first entries, leased as they are created.
   */
  private reserveRuns(
    queue: string,
    config: QueueConfig,
    layout: Layout,
    slots: readonly SlotRange[],
    view: ShardWindow,
  ): Reservation | undefined {
    const fresh = slots.map(({ range, entries }) => rangeAsCreated(range, entries));
    const runs = admittedRuns(view.ranges, fresh, config.max_per_key, this.now(), view.blocked);
    const groups = runs.map((run) =>
      run.entries.map(({ range, index }) => ({ slot: fresh.indexOf(range), index })),
    );
    return this.offer(queue, layout, groups, true);
  }

  /** Receivers waiting in this process for what `layout` admits: its entries that enter free. */
  private reserve(queue: string, layout: Layout, finished: ReadonlySet<string>): Reservation | undefined {
    const groups = layout.ranges.flatMap(({ slice }, slot) =>
      slice.flatMap((e, index) => (finished.has(e.sequence) ? [] : [[{ slot, index }]])),
    );
    return this.offer(queue, layout, groups, false);
  }

  /**
   * Offers `groups` of the layout's entries (by slot and index) to the receivers waiting here;
   * as `runs`, each group whole to one receiver. A group ends before an entry that carries no
   * payload of its own (a retry's points elsewhere for it).
   */
  private offer(
    queue: string,
    layout: Layout,
    groups: readonly { slot: number; index: number }[][],
    runs: boolean,
  ): Reservation | undefined {
    if (!this.deps.waiters) return undefined;
    const envelopeOf = (slot: number, index: number) =>
      ((layout.ranges[slot] as Layout['ranges'][number]).slice[index] as SegmentEntry).envelope;
    const offers = groups.flatMap((group, n) => {
      const cut = group.findIndex(({ slot, index }) => envelopeOf(slot, index).ref);
      return (cut < 0 ? group : group.slice(0, cut)).map(({ slot, index }) => ({
        slot,
        index,
        bytes: payloadBytes(envelopeOf(slot, index)),
        ...(runs ? { run: n } : {}),
      }));
    });
    return this.deps.waiters.reserve(queue, offers, this.now());
  }

  /**
   * Room left in the shard's window, waiting a little for acks to make some when there is too
   * little (an ack usually frees room sooner than the event source's retry). Too little is less
   * than a range's worth of what is wanted: behind a backlog, admitting each slot as one ack frees
   * it would cut the refill into ranges of an entry or two, and every range costs its creation, a
   * lease write and an ack write whatever it holds.
   */
  private async freeRoom(
    queue: string,
    shard: string,
    size: number,
    head: Range | undefined,
    wanted: number,
    waitMs: number,
  ): Promise<number> {
    if (!head) return size;
    const at = `${queue}\u0000${shard}`;
    // The commit point only moves up, so a window measured from one seen before is no smaller
    // than the true one: when everything fits even so, no read is needed.
    const seen = this.commitSeen.get(at);
    if (seen !== undefined && size - (admittedTotal(head) - seen) >= wanted)
      return size - (admittedTotal(head) - seen);
    const enough = Math.max(1, Math.min(wanted, RANGE_ENTRIES, Math.ceil(size / 4)));
    const deadline = Date.now() + waitMs;
    for (;;) {
      const lowest = await this.lowestOpen(queue, shard, head);
      this.commitSeen.set(at, lowest?.base ?? admittedTotal(head));
      const free = size - windowSize(head, lowest);
      if (free >= enough || Date.now() >= deadline) return free;
      await sleep(WINDOW_POLL_MS);
    }
  }

  /** The commit point: the shard's lowest unfinished range. Moves the stored hint up to it. */
  async lowestOpen(queue: string, shard: string, head: Range | undefined): Promise<Range | undefined> {
    if (!head) return undefined;
    const hint = await this.deps.ranges.commitHint(queue, shard);
    let start = hint;
    let found: Range | undefined;
    let last: Range | undefined;
    for (let size = COMMIT_FIRST_PAGE; ; size = COMMIT_PAGE) {
      const page = await this.deps.ranges.from(queue, shard, start, size, true);
      found = page.find((r) => !isFinished(r));
      last = page.at(-1);
      if (found || page.length < size || !last) break;
      start = last.start;
    }
    const commit = found?.start ?? last?.start;
    if (commit !== undefined && commit !== hint)
      await this.deps.ranges.advanceCommitHint(queue, shard, commit);
    return found;
  }
}

/**
 * The envelope admission takes from a log record's bytes; undefined for a Lambda consumer's own
 * retry (for that consumer alone, left in the log if the queue changed to pull). Throws for
 * bytes that are not an envelope: such a record can never be delivered.
 */
export function admissionEnvelope(data: Uint8Array): Envelope | undefined {
  const envelope = decodeEnvelope(data);
  return envelope.for === undefined ? envelope : undefined;
}

/** The indexes in `slice` of the entries whose sequence numbers are in `sequences`. */
function indexesIn(slice: readonly SegmentEntry[], sequences: ReadonlySet<string>): number[] {
  return slice.flatMap((e, index) => (sequences.has(e.sequence) ? [index] : []));
}
