import type { Logger } from '@aws-lambda-powertools/logger';
import type { FastAdmission } from '../admission/fast-admission.js';
import type { LagCatchUp } from '../admission/lag-catch-up.js';
import type { RangeAdmission } from '../admission/range-admission.js';
import { mapLimit } from '../core/async.js';
import { consumerNamespace, type QueueConfig, type TenantConfig } from '../core/config.js';
import {
  compareSequence,
  dueRetries,
  expiredEntries,
  gapCap,
  type Range,
  slowLeaseMs,
  stuckEntries,
  stuckRetries,
} from '../core/ranges.js';
import { REST_HORIZON_MS, rangeNeedsSweep } from '../core/sweep-rest.js';
import type { KeyOrder } from '../delivery/key-order.js';
import type { FailedEntry, RangeFailures } from '../delivery/range-failures.js';
import type { Requeue } from '../delivery/requeue.js';
import type { ShardDirectory } from '../log/stream.js';
import type { DlqRetentions } from '../operations/dlq-retention.js';
import type { Redrives } from '../operations/redrive.js';
import type { Replays } from '../operations/replay.js';
import type { Counters } from '../store/counters.js';
import type { KeyHolds } from '../store/key-holds.js';
import type { KeyStates } from '../store/key-states.js';
import { gsi, timeSortKey } from '../store/keys.js';
import type { MessageStore } from '../store/messages.js';
import type { RangeStore } from '../store/ranges.js';
import type { SegmentStore } from '../store/segments.js';
import type { BlockedKeys } from './blocked-keys.js';
import type { HeldSweep } from './held-sweep.js';
import type { LineageSweep } from './lineage-sweep.js';
import { WindowScan } from './window-scan.js';

/**
 * sweep: puts due messages from the delay store back into the log (the next entry of each),
 * appends the retry entries of nacked entries that waited in their ranges, and turns expired
 * leases into failed attempts.
 */

export interface SweeperDeps {
  tenant: TenantConfig;
  messages: MessageStore;
  counters: Counters;
  shards: ShardDirectory;
  keyOrder: KeyOrder;
  keys: KeyStates;
  holds: KeyHolds;
  ranges: RangeStore;
  segments: SegmentStore;
  rangeFailures: RangeFailures;
  /** Ordered pull queues: held deliveries whose leases ran out, blocked keys' waiting messages. */
  heldSweep: HeldSweep;
  blockedKeys: BlockedKeys;
  /** A resharded stream's closed shards, marked ended and finished per queue. */
  lineageSweep?: Pick<LineageSweep, 'sweep'>;
  admission: RangeAdmission;
  /** Retries it appended are admitted at once, not at dispatch's next poll. */
  fastAdmission?: Pick<FastAdmission, 'afterAppend'>;
  requeue: Requeue;
  redrives: Redrives;
  replays: Replays;
  retentions: DlqRetentions;
  /** Queues of shared streams that dispatch passed over on a shard. */
  lagCatchUp: Pick<LagCatchUp, 'any' | 'run'>;
  logger: Logger;
  now?: () => number;
}

export interface SweepReport {
  requeued: number;
  expired: number;
  /** Held messages returned to the window after their key was released; keys woken for a Lambda consumer. */
  released: number;
  /** Dead letters moved back by redrive jobs. */
  redriven: number;
  /** Copies appended by replay jobs. */
  replayed: number;
  /** Dead letters moved onto a longer DLQ retention by retention jobs. */
  extended: number;
}

/** A report of nothing done: what a pass, and an invocation of several, adds to. */
export function emptyReport(): SweepReport {
  return { requeued: 0, expired: 0, released: 0, redriven: 0, replayed: 0, extended: 0 };
}

/** Items handled per partition per pass; a pass repeats while partitions stay full. */
const PAGE = 100;
/**
 * Ranges read per shard where the whole window is read (an ordered queue, a Lambda consumer, the
 * rest decision): a full default window (10,000 entries) is 500 of them.
 */
const RANGES_PER_PASS = 1000;
/** Queues and consumers a pass sweeps at once. */
const NAMESPACES_AT_ONCE = 4;
/** A key with held messages is woken again after this long if its hold area is still there. */
const WAKE_EVERY_MS = 5000;

/** Message state the sweep serves: a queue's own, or one of its Lambda consumers'. */
interface Namespace {
  /** The queue name the state is kept under. */
  name: string;
  /** The queue whose stream a retry goes back to. */
  queue: string;
  config: QueueConfig;
  /** A consumer's retry is re-appended for that consumer only. */
  consumer?: string;
}

/** A queue's own state too when it has consumers: what it held before a switch to push still drains. */
function namespaces(tenant: TenantConfig): Namespace[] {
  return Object.entries(tenant.queues).flatMap(([queue, config]) => [
    { name: queue, queue, config },
    ...config.consumers.map((c) => ({
      name: consumerNamespace(queue, c.name),
      queue,
      config,
      consumer: c.name,
    })),
  ]);
}

export class Sweeper {
  /**
   * Per queue and shard, the retry entries this instance appended for waiting retries, by the
   * entry they retry: appended again only once admission went past one without finishing its
   * entry (the copy was lost). A new instance appends them again; admission takes one copy.
   */
  private readonly appended = new Map<string, Map<string, string>>();

  private readonly scan: WindowScan;
  /** Namespaces whose last pass left a closed shard not ended (`pending` follows the pass). */
  private readonly unended = new Set<string>();

  constructor(private readonly deps: SweeperDeps) {
    this.scan = new WindowScan(deps.ranges);
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /**
   * One pass over every queue and consumer. A namespace whose pass fails (an AWS call that failed
   * after its retries, or a bug) is logged and left for the next pass: it must not stop the others.
   * The pass still fails at its end, so the scheduler sees it.
   */
  async sweepOnce(): Promise<SweepReport> {
    const report = emptyReport();
    const failures: unknown[] = [];
    await this.deps.lagCatchUp.run().catch((err: unknown) => {
      failures.push(err);
      this.deps.logger.error('catching up a lagging queue failed', { error: String(err) });
    });
    // Side by side, so a queue's pass does not wait for a busier queue's.
    await mapLimit(namespaces(this.deps.tenant), NAMESPACES_AT_ONCE, async (ns) => {
      try {
        await this.sweepNamespace(ns, report);
      } catch (err) {
        failures.push(err);
        this.deps.logger.error('sweep of a queue failed', {
          queue: ns.name,
          error: String(err),
          stack: (err as Error).stack,
        });
      }
    });
    if (failures.length) throw failures[0];
    return report;
  }

  /**
   * Whether anything the sweep handles comes due within REST_HORIZON_MS (core/sweep-rest.ts): a
   * running job, a lease or a retry in the ranges, a delayed message, a lease the gap cap moved
   * out of its range, an ordered queue's held messages, a closed shard the last pass did not find
   * ended. A parked key waits for an operator, whose skip or redrive arms the sweep: it keeps
   * nothing awake.
   */
  async pending(): Promise<boolean> {
    const now = this.now();
    const soon = timeSortKey(now + REST_HORIZON_MS + 1, '');
    if (await this.deps.lagCatchUp.any()) return true;
    for (const ns of namespaces(this.deps.tenant)) {
      for (const jobs of [this.deps.redrives, this.deps.replays, this.deps.retentions])
        if (await jobs.anyRunning(ns.name)) return true;
      // A closed shard whose records were not all admitted at the pass: its children's keys wait on it.
      if (this.unended.has(ns.name)) return true;
      for (const shard of await this.deps.shards.shards(ns.config.stream)) {
        const { messages } = this.deps;
        // The whole window, not a pass's share: a lease a turn has not reached must keep it up.
        const open = await this.openRanges(ns, shard, true);
        if (open.some((range) => rangeNeedsSweep(range, now))) return true;
        for (const index of [gsi.delayed(ns.name, shard), gsi.leased(ns.name, shard)])
          if ((await messages.partition(index, { limit: 1, below: soon })).length) return true;
        if (ns.config.ordered && (await this.heldNeedsSweep(ns, shard, now + REST_HORIZON_MS))) return true;
      }
    }
    return false;
  }

  /**
   * Keys with held messages that are not parked: a Lambda consumer's are the sweep's to wake; a
   * pull queue's only once the lease of the message delivered from the hold runs out by `soon`.
   */
  private async heldNeedsSweep(ns: Namespace, shard: string, soon: number): Promise<boolean> {
    const markers = await this.deps.holds.marked(ns.name, shard);
    if (!markers.length) return false;
    const states = await this.deps.keys.getMany(
      ns.name,
      markers.map((m) => m.key),
    );
    return markers.some((m) => {
      const state = states.get(m.key);
      if (state?.parked_at !== undefined) return false;
      return ns.consumer !== undefined || (state?.lease_expires_at ?? Number.POSITIVE_INFINITY) <= soon;
    });
  }

  private async sweepNamespace(ns: Namespace, report: SweepReport): Promise<void> {
    // Each count is added after its await: `report.x += await …` would read x before the wait,
    // and lose what other namespaces and shards, swept meanwhile, added to it.
    const redriven = await this.deps.redrives.runPass(ns.name, ns.config);
    report.redriven += redriven;
    const replayed = await this.deps.replays.runPass(ns.name, ns.config);
    report.replayed += replayed;
    const extended = await this.deps.retentions.runPass(ns.name, ns.config);
    report.extended += extended;
    const shards = await this.deps.shards.shards(ns.config.stream);
    await Promise.all(
      shards.map(async (shard) => {
        const ranges = await this.expireRanges(ns, shard);
        report.expired += ranges.expired;
        const requeued = ranges.appended + (await this.requeueDue(ns, shard));
        report.requeued += requeued;
        if (requeued && ns.consumer === undefined)
          await this.deps.fastAdmission?.afterAppend(
            ns.queue,
            ns.config,
            Array.from({ length: requeued }, () => ({ shard })),
          );
        if (ns.config.ordered && ns.consumer === undefined) {
          const expired = await this.deps.heldSweep.sweep(ns.name, ns.config, shard);
          report.expired += expired;
        } else if (ns.config.ordered) {
          const released = await this.wakeHeld(ns.name, shard);
          report.released += released;
        }
      }),
    );
    const lineage = await this.deps.lineageSweep?.sweep(ns.name, ns.config, this.now());
    if (lineage?.unended) this.unended.add(ns.name);
    else this.unended.delete(ns.name);
  }

  /**
   * An ordered queue's Lambda consumer: keys with held messages and nothing of theirs in flight
   * (the invocation draining them crashed or ran out of time, a skip or a redrive finished) get a
   * wake record, which the consumer answers by delivering them. At most once per WAKE_EVERY_MS a
   * key: a wake that finds the hold area empty, or the key busy again, does nothing.
   */
  private async wakeHeld(namespace: string, shard: string): Promise<number> {
    const markers = await this.deps.holds.marked(namespace, shard);
    if (!markers.length) return 0;
    const states = await this.deps.keys.getMany(
      namespace,
      markers.map((m) => m.key),
    );
    const now = this.now();
    const due = (
      await mapLimit(markers, 8, async (m) => {
        const state = states.get(m.key);
        if (state?.parked_at !== undefined || now - (m.wokenAt ?? 0) < WAKE_EVERY_MS) return [];
        if (state?.busy_with === undefined) return [m];
        // Busy with its own first held message: a failure of it that never landed (keyed-delivery.ts).
        const [first] = await this.deps.holds.first(namespace, m.key, 1);
        return first?.envelope.message_id === state.busy_with ? [m] : [];
      })
    ).flat();
    const woken = await mapLimit(due, 8, async (m) => {
      if (!(await this.deps.requeue.wake(namespace, m.key, now))) return false;
      await this.deps.holds.woke(namespace, shard, m.key, now);
      return true;
    });
    return woken.filter(Boolean).length;
  }

  private async requeueDue(ns: Namespace, shard: string): Promise<number> {
    let total = 0;
    for (;;) {
      const now = this.now();
      const due = await this.deps.messages.partition(gsi.delayed(ns.name, shard), {
        limit: PAGE,
        below: timeSortKey(now + 1, ''),
      });
      if (!due.length) return total;
      const landed = await this.deps.requeue.reappend(ns.name, due, 'delayed', now);
      total += landed.length;
      if (landed.length < due.length || due.length < PAGE) return total;
    }
  }

  /**
   * The lease layer: expired leases of the ranges a pass attends to (and of leases the gap cap
   * moved out of them) become failed attempts; the gap cap moves live leases far below the head
   * out of their ranges; nacked entries waiting in their ranges get their retry entries appended
   * when due, or move to the delay store when far below the head; the commit point's hint moves
   * up to the lowest unfinished range.
   */
  private async expireRanges(ns: Namespace, shard: string): Promise<{ expired: number; appended: number }> {
    const { name: queue, config } = ns;
    const now = this.now();
    const open = await this.openRanges(ns, shard, false);
    // An ordered queue's Lambda consumer takes over its crashed invocations' leases itself, in its
    // keys' order (lambda-consumer/keyed-delivery.ts): failing one here would let its key's next go first.
    const keyed = ns.consumer !== undefined && config.ordered;
    const expired = keyed
      ? []
      : open.flatMap((range) => expiredEntries(range, now).map((index) => ({ range, index })));
    const moved = await mapLimit(expired, 16, async ({ range, index }) => {
      const target = await this.entryOf(queue, range, index);
      if (!target) return false;
      const outcome = await this.deps.rangeFailures.fail(
        config,
        target,
        { reason: 'lease_expired', lease: 'expired' },
        now,
      );
      return outcome !== undefined;
    });
    // A Lambda consumer's lease ends with its invocation: none outlives the gap cap's reason.
    const stuck =
      ns.consumer === undefined ? stuckEntries(open, gapCap(config), now, slowLeaseMs(config)) : [];
    await mapLimit(stuck, 16, async ({ range, index }) => {
      const target = await this.entryOf(queue, range, index);
      if (target) await this.deps.rangeFailures.evict(config, target, now);
    });
    let appended = 0;
    if (ns.consumer === undefined) {
      // An ordered queue's retries are delivered again in place (ordered-look.ts).
      if (!config.ordered) appended = await this.appendDueRetries(queue, shard, open, now);
      await mapLimit(stuckRetries(open, gapCap(config)), 16, async ({ range, index }) => {
        const entry = await this.deps.segments.entryAt(queue, range, index);
        if (entry)
          await this.deps.rangeFailures.moveRetry(
            config,
            { queue, range, index, sequence: entry.sequence, envelope: entry.envelope },
            now,
          );
      });
    }
    if (ns.consumer === undefined && config.ordered) {
      const closed = (await this.deps.shards.lineage(config.stream, now)).get(shard)?.closed === true;
      await this.deps.blockedKeys.sweep(queue, config, shard, open, now, closed);
    }
    const evictedExpired = await this.expireEvicted(queue, config, shard, now);
    await this.deps.admission.lowestOpen(queue, shard, open.at(-1));
    return { expired: moved.filter(Boolean).length + evictedExpired, appended };
  }

  /** Nacked entries that waited in their ranges and are due: their retry entries go into the log. */
  private async appendDueRetries(queue: string, shard: string, open: Range[], now: number): Promise<number> {
    const at = `${queue}\u0000${shard}`;
    const before = this.appended.get(at) ?? new Map<string, string>();
    const still = new Map<string, string>();
    // A range this pass did not read keeps its copies; one below the first read is finished.
    const read = new Set(open.map((range) => range.start));
    const first = open[0]?.start;
    for (const [name, copy] of before) {
      const start = name.slice(0, name.indexOf('/'));
      if (!read.has(start) && first !== undefined && compareSequence(start, first) > 0) still.set(name, copy);
    }
    const head = open.at(-1)?.last;
    const due: { range: Range; index: number; name: string }[] = [];
    const nameOf = (range: Range, index: number) => `${range.start}/${index}`;
    for (const range of open) {
      for (const index of range.retrying.keys()) {
        const copy = before.get(nameOf(range, index));
        if (copy !== undefined) still.set(nameOf(range, index), copy);
      }
      for (const index of dueRetries(range, now)) {
        const copy = still.get(nameOf(range, index));
        const lost = copy !== undefined && head !== undefined && compareSequence(head, copy) >= 0;
        if (copy === undefined || lost) due.push({ range, index, name: nameOf(range, index) });
      }
    }
    this.appended.set(at, still);
    if (!due.length) return 0;
    const entries = await mapLimit(due, 16, async (d) => {
      const entry = await this.deps.segments.entryAt(queue, d.range, d.index);
      return entry ? [{ ...d, entry }] : [];
    });
    const found = entries.flat();
    const landed = await this.deps.requeue.appendRetries(queue, found, now);
    found.forEach((d, i) => {
      const sequence = landed[i];
      if (sequence !== undefined) still.set(d.name, sequence);
    });
    return landed.filter((s) => s !== undefined).length;
  }

  /** Leases the gap cap moved out of their ranges, expired: failed from the message's item. */
  private async expireEvicted(
    queue: string,
    config: QueueConfig,
    shard: string,
    now: number,
  ): Promise<number> {
    const items = await this.deps.messages.partition(gsi.leased(queue, shard), {
      limit: PAGE,
      below: timeSortKey(now + 1, ''),
    });
    const moved = await mapLimit(items, 16, async (item) => {
      const range = await this.deps.ranges.containing(queue, shard, item.seq);
      if (!range || (item.lease_expires_at ?? Number.POSITIVE_INFINITY) > now) return false;
      const entries = (await this.deps.segments.get(queue, shard, range.segment)) ?? [];
      const index = entries.slice(range.segment.offset).findIndex((e) => e.sequence === item.seq);
      const entry = entries[range.segment.offset + index];
      if (index < 0 || !entry) return false;
      const lease = {
        expiresAt: item.lease_expires_at as number,
        deliveredAt: item.delivered_at ?? now,
        ...(item.consumer_id !== undefined ? { consumerId: item.consumer_id } : {}),
      };
      const outcome = await this.deps.rangeFailures.fail(
        config,
        { queue, range, index, sequence: entry.sequence, envelope: entry.envelope, lease, evicted: true },
        { reason: 'lease_expired', lease: 'expired' },
        now,
      );
      return outcome !== undefined;
    });
    return moved.filter(Boolean).length;
  }

  /**
   * The unfinished ranges a pass attends to: a pull queue's where its leases can be
   * (window-scan.ts), so its backlog adds no reads to a pass; an ordered queue's blocked keys and a
   * Lambda consumer's keys read the window from the commit point (a consumer's holds only the
   * batches it took). `whole`: the window from the commit point, for the rest decision, made only
   * after a pass that found nothing to do, once no request has armed the sweep for 40 s.
   */
  private async openRanges(ns: Namespace, shard: string, whole: boolean): Promise<Range[]> {
    if (!whole && ns.consumer === undefined && !ns.config.ordered) return this.scan.read(ns.name, shard);
    const { ranges } = this.deps;
    return ranges.from(ns.name, shard, await ranges.commitHint(ns.name, shard), RANGES_PER_PASS);
  }

  private async entryOf(queue: string, range: Range, index: number): Promise<FailedEntry | undefined> {
    const entry = await this.deps.segments.entryAt(queue, range, index);
    const lease = range.leases.get(index);
    if (!entry || !lease) return undefined;
    return { queue, range, index, sequence: entry.sequence, envelope: entry.envelope, lease };
  }
}
