import { createHash } from 'node:crypto';
import { entryStatus, type Pick, type Range } from './ranges.js';

/**
 * Per-key ordering: messages of a key are delivered in the order they were accepted, at most one
 * of them (or one per-key batch) in flight. Pure rules over what the store reports.
 */

export interface KeyView {
  /** The message that holds the key (leased, delayed or coming back through the log). */
  busy_with?: string;
  parked_at?: number;
}

/** What a Lambda consumer on the lease layer does with a message of a key when it reaches it. */
export type KeyedStep = 'deliver' | 'hold' | 'redriven';

export interface PushKeyView extends KeyView {
  dead_message_id?: string;
  /** Messages of the key wait in its hold area: they go before any newer one (a token: store/key-states.ts). */
  holding?: number;
}

/**
 * A key holds back only its own later messages (docs/ordered-queues.md): a parked key everything but its
 * redriven dead message (which then goes first), a key busy with a retry everything but that
 * retry, a key with held messages every newer one (they join the hold area behind them).
 */
export function keyedStep(state: PushKeyView | undefined, messageId: string): KeyedStep {
  if (state?.parked_at !== undefined) return state.dead_message_id === messageId ? 'redriven' : 'hold';
  if (state?.busy_with !== undefined) return state.busy_with === messageId ? 'deliver' : 'hold';
  return state?.holding ? 'hold' : 'deliver';
}

/**
 * A key's tag in a range item: a short hash, so a range of an ordered queue stays under 1 KB
 * whatever its keys. Two keys that share a tag only wait for each other (never out of order);
 * at 24 bits, 500 busy keys share one in about 1 % of shards.
 */
export function keyTag(key: string): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, KEY_TAG_CHARS);
}

export const KEY_TAG_CHARS = 4;

/**
 * A key's messages a receiver may lease together from an ordered pull queue's ranges: the key's
 * first unfinished entries, in log order, all free (or one retry due in place), up to
 * `max_per_key`. Every earlier entry of the key is finished, so none of them can go out of order.
 */
export interface KeyRun {
  tag: string;
  /** In log order. */
  entries: { range: Range; index: number }[];
  /** A failed entry due again where it is (its first delivery was earlier): leased alone. */
  retry: boolean;
  /**
   * A blocked key's later free entry: goes only if it is the message holding the key (a retry or
   * redriven dead letter back through the log, behind the key's messages that waited for it).
   */
  holderOnly?: boolean;
}

/**
 * The runs of `ranges` (contiguous, oldest first, starting at or below the shard's lowest
 * unfinished entry): per key, its first unfinished entries while they are free. A key whose first
 * unfinished entry is leased, waiting for its retry or not free for another reason waits behind
 * it, so a hot key's backlog never hides another key's message: every key's first entry is found
 * wherever it sits in what was read. Of a `blocked` tag, every later free entry is a run of its
 * own too (`holderOnly`).
 */
export function keyRuns(
  ranges: readonly Range[],
  maxPerKey: number,
  now: number,
  blocked: ReadonlySet<string> = new Set(),
): KeyRun[] {
  const runs = new Map<string, KeyRun>();
  const stopped = new Set<string>();
  const holders: KeyRun[] = [];
  for (const range of ranges)
    for (let index = 0; index < range.count; index++) {
      const status = entryStatus(range, index, now);
      if (status === 'acked' || status === 'failed') continue;
      const tag = range.keys?.[index] ?? `@${range.base + index}`;
      const due = status === 'retrying' && (range.retrying.get(index)?.dueAt ?? now + 1) <= now;
      if (stopped.has(tag)) {
        if ((status === 'free' || due) && blocked.has(tag))
          holders.push({ tag, entries: [{ range, index }], retry: due, holderOnly: true });
        continue;
      }
      const run = runs.get(tag);
      if (status === 'free' && !run?.retry && (run?.entries.length ?? 0) < maxPerKey) {
        if (run) run.entries.push({ range, index });
        else runs.set(tag, { tag, entries: [{ range, index }], retry: false });
        continue;
      }
      if (due && !run) runs.set(tag, { tag, entries: [{ range, index }], retry: true });
      else if ((status === 'free' || due) && blocked.has(tag))
        holders.push({ tag, entries: [{ range, index }], retry: due, holderOnly: true });
      stopped.add(tag);
    }
  return [...runs.values(), ...holders];
}

/**
 * The runs an admission may lease as it creates `fresh` (its new ranges, after the window): runs
 * that start in them, of keys with nothing unfinished in `window` (the shard's ranges from its
 * lowest unfinished one up to its last) and not `blocked`.
 */
export function admittedRuns(
  window: readonly Range[],
  fresh: readonly Range[],
  maxPerKey: number,
  now: number,
  blocked: ReadonlySet<string>,
): KeyRun[] {
  const isFresh = new Set(fresh);
  return keyRuns([...window, ...fresh], maxPerKey, now, blocked).filter(
    (run) =>
      !run.retry &&
      !run.holderOnly &&
      !blocked.has(run.tag) &&
      isFresh.has((run.entries[0] as KeyRun['entries'][number]).range),
  );
}

/**
 * Up to `want` messages of `runs` (in log order) for one receive: from a random run on, the runs
 * of its range first (round to the range's first), then the ranges after it, round to the first:
 * receivers looking at once mostly take different keys, and each takes from as few ranges as it
 * can (a lease write and its ack write cost a unit per range). A run is cut to what is still
 * wanted (what it leaves stays first of its key).
 */
export function chooseRuns(
  runs: readonly KeyRun[],
  want: number,
  random: () => number = Math.random,
): KeyRun[] {
  if (!runs.length || want <= 0) return [];
  const rangeOf = (run: KeyRun) => {
    const { range } = run.entries[0] as KeyRun['entries'][number];
    return `${range.shard}/${range.start}`;
  };
  const start = Math.floor(random() * runs.length);
  const drawn = rangeOf(runs[start] as KeyRun);
  const inRange = runs.flatMap((run, i) => (rangeOf(run) === drawn ? [i] : []));
  const after = (inRange.at(-1) ?? start) + 1;
  const order = [
    ...inRange.filter((i) => i >= start),
    ...inRange.filter((i) => i < start),
    ...runs.flatMap((_, i) => (i >= after ? [i] : [])),
    ...runs.flatMap((_, i) => (i < after && !inRange.includes(i) ? [i] : [])),
  ];
  const chosen: KeyRun[] = [];
  let left = want;
  for (const i of order) {
    if (left <= 0) break;
    const run = runs[i] as KeyRun;
    const entries = run.entries.slice(0, left);
    chosen.push({ ...run, entries });
    left -= entries.length;
  }
  return chosen;
}

/** Runs as one pick per range, oldest range first: a lease write each. */
export function runPicks(runs: readonly KeyRun[]): Pick[] {
  const byRange = new Map<string, Pick>();
  for (const run of runs)
    for (const { range, index } of run.entries) {
      const at = `${range.shard}/${range.start}`;
      const pick = byRange.get(at) ?? { range, indexes: [] };
      pick.indexes.push(index);
      byRange.set(at, pick);
    }
  return [...byRange.values()]
    .sort((a, b) => a.range.base - b.range.base)
    .map((p) => ({ range: p.range, indexes: p.indexes.sort((x, y) => x - y) }));
}
