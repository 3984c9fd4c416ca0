import type { LeasedEntry } from '../admission/admitted-signal.js';
import type { QueueConfig } from '../core/config.js';
import { chooseRuns, type KeyRun, keyedStep, keyRuns, keyTag, runPicks } from '../core/ordering.js';
import { isFinished, type Range } from '../core/ranges.js';
import { type LineageGate, readLineageGate } from '../core/shard-lineage.js';
import type { KeyBlocks } from '../store/key-blocks.js';
import type { KeyState, KeyStates } from '../store/key-states.js';
import type { NewLease, RangeStore } from '../store/ranges.js';
import type { SegmentEntry } from '../store/segments.js';
import type { QueueLineage } from './queue-lineage.js';

/**
 * A receiver's look at an ordered pull queue's ranges (docs: ordered queues). Every message of a
 * key waits in its range until it is the key's first unfinished entry; the look reads the ranges
 * from the shard's lowest unfinished one, takes each key's first free entries (a run, up to
 * `max_per_key`), and leases them with one all-or-none write per range. Nothing is written or read
 * per key, but for the keys the shard's blocks item names (parked, or held by a message outside
 * the ranges): their state is read, and only a free key or its holder goes.
 */

export interface OrderedLookDeps {
  ranges: RangeStore;
  blocks: KeyBlocks;
  keys: KeyStates;
  /** A resharded stream's children wait, key by key, for their ancestors (core/shard-lineage.ts). */
  lineage?: QueueLineage;
}

/** One shard's look: its runs, the keys it blocks, and the tags that wait for an ancestor. */
export interface ShardLook {
  runs: KeyRun[];
  blocked: Map<string, number>;
  waits: ReadonlySet<string>;
}

/** An entry leased by an ordered look: the key's holder is flagged, so its ack frees the key. */
export interface OrderedLeased extends LeasedEntry {
  holdsKey: boolean;
}

/**
 * After a lease write lost, how long this instance reads a range before writing to it: receivers
 * outnumber what is free, and more of them would lose again.
 */
export const CONTENDED_MS = 10_000;
/** Ranges read per page of a look. */
const RANGES_PER_PAGE = 8;
/**
 * Ranges a look reads at most per shard: behind this many (1,280 entries) of busy keys' waiting
 * messages it answers with what it found; the gap cap keeps a window's waiting keys fewer.
 */
export const MAX_RANGES = 64;
/**
 * How long a look uses the blocked keys an earlier one read, while what it reads shows no new
 * block: a key unblocked since costs its state's read, not a wrong delivery.
 */
const BLOCKS_REUSE_MS = 1000;
/**
 * How long a look uses a child shard's lineage gate: an ended ancestor admits nothing more, so a
 * key it did not hold back then it does not hold back later (a key blocks only where it has an
 * unfinished entry, or is parked or holding, and those keys were held back already). Short: a
 * gate lives only while a reshard drains, and what it holds back waits until it is read again.
 */
const GATE_REUSE_MS = 250;

/** A shard's ranges as a look read them, and its blocked keys, each with its token. */
type ShardView = { ranges: Range[]; blocked: Map<string, number> };

export class OrderedLook {
  /**
   * Per queue and shard, the lowest range this instance saw unfinished (none below it is, ever),
   * and the blocked keys it read last.
   */
  private readonly seen = new Map<
    string,
    { lowest: string; blocked: Map<string, number>; blockedAt: number }
  >();
  /** Per queue, until when this instance reads a range before it writes a lease: its last lost write. */
  private readonly contendedUntil = new Map<string, number>();
  /** Per queue and child shard, the lineage gate a look read last. */
  private readonly gates = new Map<string, { at: number; gate: LineageGate }>();

  constructor(private readonly deps: OrderedLookDeps) {}

  /**
   * The runs of one shard, with the keys the shard (and its unfinished ancestors) block, and the
   * tags whose keys wait for an ancestor's unfinished entry.
   */
  async runs(
    queue: string,
    config: QueueConfig,
    shard: string,
    want: number,
    now: number,
  ): Promise<ShardLook> {
    const gate = await this.gate(queue, config.stream, shard, now);
    if (gate === 'shut') return { runs: [], blocked: new Map(), waits: new Set() };
    // A page more a look costs more read units than the receivers racing for fewer runs lose.
    const view = await this.view(
      queue,
      shard,
      MAX_RANGES,
      now,
      // Runs that wait for an ancestor are not what a look wants: a key's holder may sit behind them.
      (read) =>
        keyRuns(read, config.max_per_key, now)
          .filter((r) => !gate.waits.has(r.tag))
          .reduce((n, r) => n + r.entries.length, 0) >= want,
    );
    const blocked = gate.blocked.size ? new Map([...gate.blocked, ...view.blocked]) : view.blocked;
    const tags = new Set([...[...blocked.keys()].map(keyTag), ...gate.waits]);
    return { runs: keyRuns(view.ranges, config.max_per_key, now, tags), blocked, waits: gate.waits };
  }

  /**
   * A shard's lineage gate: open with nothing held back unless an ancestor is unfinished; then
   * what each unfinished ancestor holds back, from its window as a look reads it.
   */
  private async gate(queue: string, stream: string, shard: string, now: number): Promise<LineageGate> {
    const open: LineageGate = { waits: new Set(), blocked: new Map() };
    const ancestors = this.deps.lineage ? await this.deps.lineage.ancestors(queue, stream, shard, now) : [];
    if (!ancestors) return 'shut';
    if (!ancestors.length) return open;
    const at = `${queue}\u0000${shard}`;
    const hit = this.gates.get(at);
    if (hit && now - hit.at < GATE_REUSE_MS) return hit.gate;
    const gate = await readLineageGate(ancestors, (a) => this.whole(queue, a, MAX_RANGES, now), now);
    this.gates.set(at, { at: now, gate });
    return gate;
  }

  /**
   * Up to `want` entries of the shards' runs, leased for `lease`: the blocked keys' runs first
   * checked against their state, the rest chosen at random, and written range by range in log
   * order (a key's later entry is never leased without its earlier one). `segments` answers
   * entries of runs (read before any lease is written, and cut to the answer's byte budget).
   */
  async lease(
    queue: string,
    looked: readonly ShardLook[],
    want: number,
    lease: NewLease,
    segments: (runs: readonly KeyRun[]) => Promise<Map<string, SegmentEntry>>,
  ): Promise<OrderedLeased[]> {
    const blockedKeys = new Set(looked.flatMap((l) => [...l.blocked.keys()]));
    const blockedTags = new Set([...blockedKeys].map(keyTag));
    const waiting = new Set(looked.flatMap((l) => l.runs.filter((run) => l.waits.has(run.tag))));
    const all = looked.flatMap((l) => l.runs);
    const open = all.filter((run) => !blockedTags.has(run.tag) && !waiting.has(run));
    const blockedRuns = all.filter((run) => blockedTags.has(run.tag) || waiting.has(run));
    const gated = blockedRuns.length
      ? await this.keyGate(
          queue,
          blockedRuns,
          blockedKeys,
          waiting,
          await segments(blockedRuns.map(firstOnly)),
        )
      : [];
    // A key's holder goes first: everything else of its key waits for it.
    const holders = gated.filter((run) => run.holds);
    const others = [...open, ...gated.filter((run) => !run.holds)];
    const chosen = [...holders, ...chooseRuns(others, want - holders.length)];
    const entries = await segments(chosen);
    // What the answer's byte budget or a missing segment entry left of each run: a prefix.
    const readable = chosen
      .map((run) => ({ ...run, entries: prefix(run.entries, (e) => entries.has(entryName(e))) }))
      .filter((run) => run.entries.length);
    return this.write(queue, readable, lease, entries);
  }

  /**
   * Runs of blocked keys (by tag), each by its first entry: a key whose state is free lets its
   * first run go; a key held by a message lets only that message go (alone, as its holder). A run
   * `waiting` for an ancestor's unfinished entry of its tag goes only as its key's holder.
   */
  private async keyGate(
    queue: string,
    runs: KeyRun[],
    blockedKeys: ReadonlySet<string>,
    waiting: ReadonlySet<KeyRun>,
    entries: Map<string, SegmentEntry>,
  ): Promise<GatedRun[]> {
    const envelopeOf = (run: KeyRun) => entries.get(entryName(run.entries[0] as RunEntry))?.envelope;
    const keys = [
      ...new Set(
        runs.flatMap((run) => {
          const key = envelopeOf(run)?.key;
          return key !== undefined && (waiting.has(run) || blockedKeys.has(key)) ? [key] : [];
        }),
      ),
    ];
    const states = keys.length ? await this.deps.keys.getMany(queue, keys) : new Map<string, KeyState>();
    return runs.flatMap((run): GatedRun[] => {
      const env = envelopeOf(run);
      if (!env) return [];
      const state = states.get(env.key ?? '');
      const holder = state?.busy_with === env.message_id && state.parked_at === undefined;
      if (waiting.has(run)) return holder ? [{ ...firstOnly(run), holds: true }] : [];
      // Another key with the same tag, not blocked itself.
      if (!blockedKeys.has(env.key ?? '')) return run.holderOnly ? [] : [run];
      if (holder) return [{ ...firstOnly(run), holds: true }];
      return !run.holderOnly && keyedStep(state, env.message_id) === 'deliver' ? [run] : [];
    });
  }

  /**
   * One all-or-none write per range; a run that loses a range ends there. When a run spans
   * ranges they go one after another, oldest first, so a key's later entry is never leased without
   * its earlier one; otherwise (always with `max_per_key` 1) all at once, not one round trip after
   * another.
   */
  private async write(
    queue: string,
    runs: GatedRun[],
    lease: NewLease,
    entries: Map<string, SegmentEntry>,
  ): Promise<OrderedLeased[]> {
    const live = new Set(runs);
    const leased: OrderedLeased[] = [];
    const picks = runPicks(runs);
    const linked = runs.some((run) => run.entries.some((e) => e.range !== run.entries[0]?.range));
    for (const wave of linked ? picks.map((pick) => [pick]) : [picks])
      await Promise.all(
        wave.map(async (pick) => {
          // The live runs with entries in this range, and those entries.
          const mine = new Map(
            [...live].flatMap((run) => {
              const here = inRangeEntries(run, pick.range);
              return here.length ? [[run, here] as const] : [];
            }),
          );
          const { range, here } = await this.writePick(queue, pick.range, mine, lease);
          // A run that did not get its entries here ends here: its later ones wait for them.
          for (const run of mine.keys()) if (!(range && here.includes(run))) live.delete(run);
          for (const run of range ? here : [])
            for (const e of mine.get(run) ?? [])
              leased.push({
                range: range as Range,
                index: e.index,
                entry: entries.get(entryName(e)) as SegmentEntry,
                holdsKey: run.holds === true,
              });
        }),
      );
    return leased;
  }

  /** One range's write for the runs with entries in it (`mine`): the range as written and the runs it took. */
  private async writePick(
    queue: string,
    picked: Range,
    mine: ReadonlyMap<GatedRun, readonly RunEntry[]>,
    lease: NewLease,
  ): Promise<{ range?: Range; here: GatedRun[] }> {
    const entriesOf = (runs: readonly GatedRun[]) => runs.flatMap((run) => mine.get(run) ?? []);
    let here = [...mine.keys()];
    // What a fresh read shows still as it was picked.
    const still = async () => {
      const fresh = await this.deps.ranges.get(queue, picked.shard, picked.start);
      return fresh
        ? here.filter((run) => (mine.get(run) ?? []).every((e) => unchanged(fresh, e.range, e.index)))
        : [];
    };
    // Contended: a consistent read first finds most of what was taken since the look for a read
    // unit, where the write would fail for a write unit.
    if (here.length && (this.contendedUntil.get(queue) ?? 0) > Date.now()) here = await still();
    let written = here.length ? await this.writeRange(queue, picked, entriesOf(here), lease) : undefined;
    if (here.length && !written) {
      this.contendedUntil.set(queue, Date.now() + CONTENDED_MS);
      // Taken meanwhile: once more with what is still as it was picked.
      here = await still();
      written = here.length ? await this.writeRange(queue, picked, entriesOf(here), lease) : undefined;
    }
    return { range: written, here };
  }

  private writeRange(
    queue: string,
    range: Range,
    picked: readonly RunEntry[],
    lease: NewLease,
  ): Promise<Range | undefined> {
    const free = picked.filter((e) => !range.retrying.has(e.index)).map((e) => e.index);
    const due = picked.flatMap((e) => {
      const retry = range.retrying.get(e.index);
      return retry ? [{ index: e.index, retry }] : [];
    });
    return this.deps.ranges.leaseOrdered(queue, range, free, due, lease);
  }

  /**
   * A shard's whole window for an admission: its ranges from the lowest unfinished one to the
   * last, and the tags its blocks item names. Undefined when the window is longer than
   * `maxRanges`, or when an ancestor of the shard is unfinished: the admission then leaves its
   * entries to a look. A read that missed a range ends early: the admission finds its last range
   * is not the shard's.
   */
  async window(
    queue: string,
    stream: string,
    shard: string,
    maxRanges: number,
    now: number,
  ): Promise<{ ranges: Range[]; blocked: Set<string> } | undefined> {
    const ancestors = this.deps.lineage ? await this.deps.lineage.ancestors(queue, stream, shard, now) : [];
    if (!ancestors || ancestors.length) return undefined;
    const whole = await this.whole(queue, shard, maxRanges, now);
    return whole && { ranges: whole.ranges, blocked: new Set([...whole.blocked.keys()].map(keyTag)) };
  }

  /** The shard's window and blocked keys; undefined when it is longer than `maxRanges`. */
  async whole(queue: string, shard: string, maxRanges: number, now: number): Promise<ShardView | undefined> {
    const view = await this.view(queue, shard, maxRanges + 1, now, () => false);
    return view.ranges.length > maxRanges ? undefined : view;
  }

  /**
   * The shard's ranges from its lowest unfinished one (as far as this instance or the commit hint
   * knows), page by page until `enough` of them are read or `maxRanges`, contiguous: a range an
   * eventually consistent read missed ends what is read, since a key's earlier entry could be in
   * it. Then its blocked keys: those this instance read last, while they are recent and no entry
   * read was failed for a key outside them; otherwise read again, consistently, after the ranges.
   * A key is blocked before an entry of it is failed, and every failure below where this look
   * starts was in ranges an earlier look read (and checked) before it moved the start past them,
   * so what a failure blocked is never missed.
   */
  private async view(
    queue: string,
    shard: string,
    maxRanges: number,
    now: number,
    enough: (ranges: readonly Range[]) => boolean,
  ): Promise<ShardView> {
    const at = `${queue}\u0000${shard}`;
    const seen = this.seen.get(at);
    // What this instance saw unfinished last is at or below the commit point: no read of the hint.
    let start = seen?.lowest ?? (await this.deps.ranges.commitHint(queue, shard));
    const ranges: Range[] = [];
    for (let more = true; more; ) {
      const page = await this.deps.ranges.from(
        queue,
        shard,
        start,
        RANGES_PER_PAGE + (ranges.length ? 1 : 0),
      );
      // Every page after the first starts with the last range of the one before.
      for (const range of ranges.length ? page.slice(1) : page) {
        const last = ranges.at(-1);
        if (last && range.base !== last.base + last.count) {
          more = false;
          break;
        }
        ranges.push(range);
      }
      if (page.length < RANGES_PER_PAGE || enough(ranges) || ranges.length >= maxRanges) more = false;
      start = ranges.at(-1)?.start;
    }
    const reuse = seen && now - seen.blockedAt < BLOCKS_REUSE_MS && !failedOutside(ranges, seen.blocked);
    const blocked = reuse ? seen.blocked : await this.deps.blocks.read(queue, shard);
    // Where the next look starts: the lowest unfinished range read, or the last when all are
    // finished; set with the blocks checked against every range below it, never before them.
    const lowest = ranges.find((r) => !isFinished(r)) ?? ranges.at(-1);
    if (lowest) this.seen.set(at, { lowest: lowest.start, blocked, blockedAt: reuse ? seen.blockedAt : now });
    return { ranges, blocked };
  }
}

type RunEntry = KeyRun['entries'][number];

/** A run past its key's gate: `holds` when its message holds the key (its ack frees it). */
type GatedRun = KeyRun & { holds?: boolean };

/** Whether an entry read is failed for a key not in `blocked`: its block may be newer. */
function failedOutside(ranges: readonly Range[], blocked: ReadonlyMap<string, number>): boolean {
  const tags = new Set([...blocked.keys()].map(keyTag));
  return ranges.some((r) => [...r.failed].some((i) => !tags.has(r.keys?.[i] ?? '')));
}

/** A run's entries in one range. */
function inRangeEntries(run: KeyRun, range: Pick<Range, 'shard' | 'start'>): RunEntry[] {
  return run.entries.filter((e) => e.range.start === range.start && e.range.shard === range.shard);
}

function firstOnly(run: KeyRun): KeyRun {
  return { ...run, entries: run.entries.slice(0, 1) };
}

/** A picked entry's name in the segments read for a look. */
export function entryName(e: { range: Pick<Range, 'shard' | 'start'>; index: number }): string {
  return `${e.range.shard}/${e.range.start}/${e.index}`;
}

function prefix<T>(items: readonly T[], keep: (item: T) => boolean): T[] {
  const cut = items.findIndex((item) => !keep(item));
  return cut < 0 ? [...items] : items.slice(0, cut);
}

/** Whether an entry is still as a look picked it: free, or waiting in place as it was. */
function unchanged(fresh: Range, picked: Range, index: number): boolean {
  if (fresh.acked.has(index) || fresh.failed.has(index) || fresh.leases.has(index)) return false;
  const was = picked.retrying.get(index);
  const is = fresh.retrying.get(index);
  return was === undefined ? is === undefined : is?.dueAt === was.dueAt && is.attempt === was.attempt;
}
