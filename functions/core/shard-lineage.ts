import { entryStatus, type Range } from './ranges.js';

/**
 * Shard lineage in the lease layer (docs/resharding.md). A split or a merge closes its parent
 * shards and opens children; a key's later messages land in a child while its earlier ones may
 * still be unfinished in a parent. On an ordered queue a child's message of a key waits while the
 * key has anything unfinished in an ancestor; other keys of the child flow at once. Pure rules over
 * what the stream lists and the store reports.
 */

export interface ShardLink {
  id: string;
  /** One for a split, two for a merge, none for a shard the stream was created with. */
  parents: readonly string[];
  /** Closed by a split or a merge: nothing more is appended to it. */
  closed: boolean;
}

/**
 * What a queue's lease layer has recorded of a closed shard, each step for good:
 * - `ended`: every record of the queue in the shard is in its ranges;
 * - `finished`: ended, nothing of it unfinished or blocked, and its parents finished.
 */
export type ShardProgress = 'ended' | 'finished';

export type ShardState = 'open' | 'draining' | 'finished';

/** A shard as stats show it. */
export function shardState(link: ShardLink, progress: ShardProgress | undefined): ShardState {
  if (!link.closed) return 'open';
  return progress === 'finished' ? 'finished' : 'draining';
}

/** Per shard, the least progress among several readers' (a queue's Lambda consumers'). */
export function leastProgress(
  readers: readonly ReadonlyMap<string, ShardProgress>[],
): Map<string, ShardProgress> {
  const [first, ...rest] = readers;
  const least = new Map(first);
  for (const [shard, progress] of least) {
    const others = rest.map((r) => r.get(shard));
    if (others.includes(undefined)) least.delete(shard);
    else if (others.includes('ended')) least.set(shard, 'ended');
    else least.set(shard, progress);
  }
  return least;
}

/**
 * The shard's ancestors that are not finished, nearest first. A parent the stream no longer lists
 * (trimmed past its retention) is followed like any other: its ranges may still hold a lease, and
 * only its `finished` mark releases its keys, never its absence from a listing. Its own parents
 * are not known; a finished shard's ancestors are finished, so the walk stops at one.
 */
export function unfinishedAncestors(
  links: ReadonlyMap<string, ShardLink>,
  shard: string,
  progress: ReadonlyMap<string, ShardProgress>,
): string[] {
  const found: string[] = [];
  const seen = new Set<string>([shard]);
  let frontier = [shard];
  while (frontier.length) {
    const next: string[] = [];
    for (const id of frontier)
      for (const parent of links.get(id)?.parents ?? []) {
        if (seen.has(parent) || progress.get(parent) === 'finished') continue;
        seen.add(parent);
        found.push(parent);
        next.push(parent);
      }
    frontier = next;
  }
  return found;
}

/**
 * The shards descending from `shard` (its children, theirs, and so on), nearest first: where a
 * key of it is appended once it is closed, since a key's hash stays in one of them.
 */
export function descendants(links: ReadonlyMap<string, ShardLink>, shard: string): string[] {
  const found: string[] = [];
  const seen = new Set<string>([shard]);
  let frontier = [shard];
  while (frontier.length) {
    const next: string[] = [];
    for (const link of links.values())
      if (!seen.has(link.id) && link.parents.some((p) => frontier.includes(p))) {
        seen.add(link.id);
        found.push(link.id);
        next.push(link.id);
      }
    frontier = next;
  }
  return found;
}

/**
 * What an unfinished ancestor holds back, as one look read it: whether it is ended, and when it
 * is, the tags of its unfinished entries and its blocked keys. No window: longer than a look reads.
 */
export interface AncestorView {
  ended: boolean;
  window?: { ranges: readonly Range[]; blocked: ReadonlyMap<string, number> };
}

/**
 * A child shard's gate: `shut` while an ancestor may still admit a message of any key (not ended)
 * or is too long to read; otherwise the tags whose keys wait for an ancestor's unfinished entry
 * (only the key's holder goes: a retry or redriven dead letter back through the log) and the keys
 * an ancestor blocks (each goes as its key state says, as a block of the child's own would).
 */
export type LineageGate = 'shut' | { waits: Set<string>; blocked: Map<string, number> };

export function lineageGate(views: readonly AncestorView[], now: number): LineageGate {
  const waits = new Set<string>();
  const blocked = new Map<string, number>();
  for (const view of views) {
    if (!view.ended || !view.window) return 'shut';
    for (const tag of unfinishedTags(view.window.ranges, now)) waits.add(tag);
    for (const [key, token] of view.window.blocked) blocked.set(key, token);
  }
  return { waits, blocked };
}

/** `lineageGate` of a child's unfinished ancestors, each ended one's window read by `windowOf`. */
export async function readLineageGate(
  ancestors: readonly { shard: string; ended: boolean }[],
  windowOf: (shard: string) => Promise<AncestorView['window']>,
  now: number,
): Promise<LineageGate> {
  const views = await Promise.all(
    ancestors.map(
      async (a): Promise<AncestorView> =>
        a.ended ? { ended: true, window: await windowOf(a.shard) } : { ended: false },
    ),
  );
  return lineageGate(views, now);
}

/** The key tags of the unfinished entries of `ranges`. */
export function unfinishedTags(ranges: readonly Range[], now: number): Set<string> {
  const tags = new Set<string>();
  for (const range of ranges)
    for (let index = 0; index < range.count; index++) {
      const status = entryStatus(range, index, now);
      if (status !== 'acked' && status !== 'failed') tags.add(range.keys?.[index] ?? '');
    }
  return tags;
}

/**
 * Whether a queue's closed, ended shard is finished now: nothing unfinished in its window, no key
 * blocked in it (a parked key or a hold area outlives the ranges), and every parent finished.
 */
export function mayFinish(
  link: ShardLink,
  progress: ReadonlyMap<string, ShardProgress>,
  window: { ranges: readonly Range[]; blocked: ReadonlyMap<string, number> },
  now: number,
): boolean {
  return (
    link.closed &&
    progress.get(link.id) === 'ended' &&
    link.parents.every((p) => progress.get(p) === 'finished') &&
    window.blocked.size === 0 &&
    unfinishedTags(window.ranges, now).size === 0
  );
}
