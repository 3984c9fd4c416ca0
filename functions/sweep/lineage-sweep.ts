import { toLogRecords } from '../admission/fast-admission.js';
import { isNamespace, namespaceParts, type QueueConfig } from '../core/config.js';
import { keyTag } from '../core/ordering.js';
import { compareSequence } from '../core/ranges.js';
import {
  mayFinish,
  readLineageGate,
  type ShardLink,
  type ShardProgress,
  unfinishedAncestors,
} from '../core/shard-lineage.js';
import type { OrderedLook } from '../delivery/ordered-look.js';
import type { ShardReader } from '../log/shard-reader.js';
import type { ShardDirectory } from '../log/stream.js';
import type { KeyBlocks } from '../store/key-blocks.js';
import type { KeyHolds } from '../store/key-holds.js';
import type { KeyStates } from '../store/key-states.js';
import type { RangeStore } from '../store/ranges.js';
import type { ShardMarks } from '../store/shard-marks.js';
import { isFree } from './blocked-keys.js';

/**
 * The sweep's part in a resharded stream (core/shard-lineage.ts): per pull queue and Lambda
 * consumer, each closed shard is marked `ended` once a read from the namespace's last range to
 * the shard's end meets no record of the queue (dispatch, the lag catch-up or the consumer admits
 * any it meets first), and `finished` once its window is empty, no key is blocked in it (nor, for
 * a consumer, has messages in its hold area) and its parents are finished. A stream that was
 * never resharded costs nothing here but its cached listing.
 *
 * On an ordered queue, a key an ancestor blocks (parked, or held by a message outside the ranges)
 * is blocked in the child too once the ancestor has no unfinished entry of it left: the child's
 * messages of the key then move to its hold area as a block of the child's own would move them,
 * and its holder (a redriven dead letter or a retry back through the log, admitted into the child
 * behind them) stays within what a look reads.
 */
export interface LineageSweepDeps {
  shards: Pick<ShardDirectory, 'lineage'>;
  marks: ShardMarks;
  reader: ShardReader;
  ranges: Pick<RangeStore, 'head'>;
  windows: Pick<OrderedLook, 'whole'>;
  blocks: Pick<KeyBlocks, 'read' | 'block'>;
  holds: Pick<KeyHolds, 'marked'>;
  keys: Pick<KeyStates, 'getMany'>;
}

type Window = Awaited<ReturnType<OrderedLook['whole']>>;

/** Records read per page, and pages a pass reads of one shard, looking for its end. */
const PAGE = 1000;
const PAGES_PER_PASS = 4;
/** A window longer than this many ranges is not finished yet: no need to read it all. */
const MAX_RANGES = 64;

export class LineageSweep {
  constructor(private readonly deps: LineageSweepDeps) {}

  /**
   * Moves the closed shards of a queue or a Lambda consumer's namespace on; answers whether one
   * of them is not ended yet.
   */
  async sweep(queue: string, config: QueueConfig, now: number): Promise<{ unended: boolean }> {
    // A queue with Lambda consumers admits its records into their namespaces only.
    if (!isNamespace(queue) && config.consumers.length) return { unended: false };
    const links = await this.deps.shards.lineage(config.stream, now);
    // Shard ids grow with each reshard: parents before their children.
    const closed = [...links.values()].filter((l) => l.closed).sort((a, b) => a.id.localeCompare(b.id));
    if (!closed.length) return { unended: false };
    const marks = await this.deps.marks.all(queue);
    const progress = new Map<string, ShardProgress>();
    for (const [shard, mark] of marks) if (mark.progress) progress.set(shard, mark.progress);
    let unended = false;
    // Each closed shard's window, read once a pass.
    const windows = new Map<string, Promise<Window>>();
    const windowOf = (shard: string) => {
      const read = windows.get(shard) ?? this.window(queue, shard, now);
      windows.set(shard, read);
      return read;
    };
    for (const link of closed) {
      if (progress.get(link.id) === 'finished') continue;
      if (progress.get(link.id) !== 'ended') {
        // A shard the stream no longer lists is past its retention: nothing of it is left to admit.
        if (link.listed && !(await this.ended(queue, config, link.id, marks.get(link.id)?.checkedThrough))) {
          unended = true;
          continue;
        }
        await this.deps.marks.mark(queue, link.id, 'ended', now);
        progress.set(link.id, 'ended');
      }
      const window = await windowOf(link.id);
      if (window && mayFinish(link, progress, window, now)) {
        await this.deps.marks.mark(queue, link.id, 'finished', now);
        progress.set(link.id, 'finished');
      }
    }
    // A Lambda consumer's mapping reads a parent to its end before its children.
    if (config.ordered && !isNamespace(queue))
      for (const link of links.values())
        await this.blockAsAncestors(queue, links, link, progress, windowOf, now);
    return { unended };
  }

  /**
   * A closed shard's window. A Lambda consumer's held keys are marked per shard, not blocked in
   * its window: they hold the shard open all the same.
   */
  private async window(queue: string, shard: string, now: number): Promise<Window> {
    const window = await this.deps.windows.whole(queue, shard, MAX_RANGES, now);
    if (!window || !isNamespace(queue)) return window;
    const held = await this.deps.holds.marked(queue, shard);
    if (!held.length) return window;
    return {
      ...window,
      blocked: new Map([...window.blocked, ...held.map((m) => [m.key, m.token ?? 0] as const)]),
    };
  }

  /** Blocks in a child the keys its ancestors block and no longer hold an unfinished entry of. */
  private async blockAsAncestors(
    queue: string,
    links: ReadonlyMap<string, ShardLink>,
    child: ShardLink,
    progress: ReadonlyMap<string, ShardProgress>,
    windowOf: (shard: string) => Promise<Window>,
    now: number,
  ): Promise<void> {
    if (!child.parents.length || progress.get(child.id) === 'finished') return;
    const ancestors = unfinishedAncestors(links, child.id, progress);
    if (!ancestors.length) return;
    const gate = await readLineageGate(
      ancestors.map((a) => ({ shard: a, ended: progress.get(a) === 'ended' })),
      windowOf,
      now,
    );
    if (gate === 'shut') return;
    const keys = [...gate.blocked.keys()].filter((key) => !gate.waits.has(keyTag(key)));
    if (!keys.length) return;
    const own = await this.deps.blocks.read(queue, child.id);
    const missing = keys.filter((key) => !own.has(key));
    if (!missing.length) return;
    const states = await this.deps.keys.getMany(queue, missing);
    for (const key of missing)
      if (!isFree(states.get(key))) await this.deps.blocks.block(queue, child.id, key);
  }

  /**
   * Whether every record of the queue in the closed shard is in its ranges: read from the later
   * of its last range and where an earlier check got to, through the shard's end.
   */
  private async ended(
    queue: string,
    config: QueueConfig,
    shard: string,
    checked: string | undefined,
  ): Promise<boolean> {
    const head = (await this.deps.ranges.head(queue, shard))?.last;
    const after =
      head && checked ? (compareSequence(head, checked) >= 0 ? head : checked) : (head ?? checked);
    let through: string | undefined;
    for await (const page of this.deps.reader.pages(
      config.stream,
      shard,
      after ? { after } : 'oldest',
      PAGE,
      PAGES_PER_PASS,
      true,
    )) {
      if (toLogRecords(page.records, namespaceParts(queue).queue, config).length) return false;
      through = page.records.at(-1)?.sequence ?? through;
      if (page.end) return true;
    }
    if (through) await this.deps.marks.checked(queue, shard, through);
    return false;
  }
}
