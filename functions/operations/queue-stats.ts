import { commitStall, sameMarks } from '../core/commit-stall.js';
import {
  consumerNamespace,
  namespaceParts,
  type QueueConfig,
  storageQuotaBytes,
  streamOf,
  type TenantConfig,
} from '../core/config.js';
import { drainView } from '../core/drain.js';
import { entryStatus, isFinished, type Range } from '../core/ranges.js';
import { leastProgress, shardState } from '../core/shard-lineage.js';
import type { KeyOrder } from '../delivery/key-order.js';
import type { QueueLineage } from '../delivery/queue-lineage.js';
import type { ShardDirectory } from '../log/stream.js';
import type { CommitMarks } from '../store/commit-marks.js';
import type { Counters } from '../store/counters.js';
import { gsi } from '../store/keys.js';
import type { MessageStore } from '../store/messages.js';
import type { QueueControls } from '../store/queue-controls.js';
import type { RangeStore } from '../store/ranges.js';
import type { StorageMeter } from '../store/storage.js';
import type { TotalsSamples } from '../store/totals-samples.js';

/**
 * The stats of a queue and of each of its Lambda consumers (GET /queues/{q}/stats), which the
 * sweep's gauges publish too (docs/contract.md, "Dead letters and operations").
 */

export interface QueueStatsDeps {
  tenant: TenantConfig;
  messages: MessageStore;
  counters: Counters;
  shards: ShardDirectory;
  keyOrder: KeyOrder;
  storage: StorageMeter;
  ranges: RangeStore;
  controls: QueueControls;
  samples: TotalsSamples;
  commitMarks: CommitMarks;
  lineage: Pick<QueueLineage, 'progress'>;
  now?: () => number;
}

/** Ranges a stats answer reads per shard: a full default window is 500. */
const STATS_RANGES = 1000;

const ageSeconds = (now: number, ms: number | undefined) =>
  ms === undefined ? 0 : Math.max(0, (now - ms) / 1000);

export class QueueStats {
  constructor(private readonly deps: QueueStatsDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /**
   * The queue's stats. `keepMarks`: the sweep's look, which keeps where each shard's commit point
   * is for the next look's `commit_stalled_seconds`.
   */
  async queue(queue: string, config: QueueConfig, options: { keepMarks?: boolean } = {}) {
    return (await this.look(queue, config, options.keepMarks ?? false)).stats;
  }

  /**
   * The sweep's look (it keeps the commit marks): the stats, with every running total and the
   * latest sample's item, which the next sample of the usage follows (sweep/gauges.ts).
   */
  sweepLook(queue: string, config: QueueConfig) {
    return this.look(queue, config, true);
  }

  private async look(queue: string, config: QueueConfig, keepMarks: boolean) {
    const now = this.now();
    const shards = await this.shardsOf(queue);
    const perShard = await Promise.all(shards.map((shard) => this.rangeShardStats(queue, shard, now)));
    // The totals first: reading them writes this instance's pending counts, the stored bytes too.
    const [dead, totals, held, pause, samples, stall, lineage] = await Promise.all([
      this.deadStats(queue, now),
      this.deps.counters.stats(queue),
      config.ordered ? this.deps.keyOrder.heldInHoldAreas(queue, shards) : 0,
      this.deps.controls.get(queue),
      this.deps.samples.get(queue),
      this.commitStall(queue, perShard, now, keepMarks),
      this.lineage(queue, config, now),
    ]);
    const storedBytes = await this.deps.storage.byReader(queue, config);
    const sum = (f: (s: (typeof perShard)[number]) => number) => perShard.reduce((a, s) => a + f(s), 0);
    const unacked = sum((s) => s.ready + s.inFlight + s.delayed) + held;
    const stats = {
      depth: sum((s) => s.ready),
      in_flight: sum((s) => s.inFlight),
      delayed: sum((s) => s.delayed),
      /** Ordered queues: messages waiting in their keys' hold areas, behind a busy or parked key. */
      held,
      dlq_depth: dead.dlq_depth,
      parked_keys: dead.parked_keys,
      oldest_unacked_age_seconds: Math.max(0, ...perShard.map((s) => s.age)),
      oldest_unacked_age_seconds_by_shard: Object.fromEntries(perShard.map((s) => [s.shard, s.age])),
      /** How long a shard's lowest unfinished entry has not moved (a poison head, on an ordered queue). */
      commit_stalled_seconds: Math.max(0, ...Object.values(stall)),
      commit_stalled_seconds_by_shard: stall,
      shards: lineage,
      dlq_oldest_age_seconds: dead.dlq_oldest_age_seconds,
      produced_total: totals.produced ?? 0,
      acked_total: totals.acked ?? 0,
      redelivered_total: totals.redelivered ?? 0,
      stale_receipts_total: totals.stale_receipts ?? 0,
      expired_unprocessed_total: totals.expired_unprocessed ?? 0,
      /** Requests refused over a quota (429), in all and by the API key refused. */
      throttled_total: totals.throttled ?? 0,
      throttled_by_key: totals.throttledByKey,
      /** What the queue holds unconsumed: a push queue's slowest consumer's, each consumer's beside it. */
      stored_bytes: Math.max(0, ...Object.values(storedBytes)),
      ...(config.consumers.length ? { stored_bytes_by_consumer: storedBytes } : {}),
      storage_quota_bytes: storageQuotaBytes(config),
      /** Set while an admin paused deliveries (POST /queues/{q}/pause). */
      paused: pause ?? null,
      /** Whether the unacked backlog shrinks, and when it will be gone at the last minute's rates. */
      drain: drainView(unacked, now, samples.latest, samples.previous),
    };
    return { stats, totals: totals.all, sampled: samples.item };
  }

  /**
   * A Lambda consumer's own counts. Its backlog is the part of the stream its event source
   * mapping has not read yet (Lambda's IteratorAge), which no item here knows; nor does it have
   * a window, receipts or acked and produced totals (the push path does not count them).
   */
  async consumer(namespace: string) {
    return (await this.consumerLook(namespace, false)).stats;
  }

  /** The sweep's look at a Lambda consumer (it keeps the commit marks): the stats, and every running total. */
  sweepConsumerLook(namespace: string) {
    return this.consumerLook(namespace, true);
  }

  private async consumerLook(namespace: string, keepMarks: boolean) {
    const now = this.now();
    const shards = await this.shardsOf(namespace);
    const perShard = await Promise.all(shards.map((shard) => this.rangeShardStats(namespace, shard, now)));
    const [dead, totals, held, stall] = await Promise.all([
      this.deadStats(namespace, now),
      this.deps.counters.stats(namespace),
      this.deps.keyOrder.heldInHoldAreas(namespace, shards),
      this.commitStall(namespace, perShard, now, keepMarks),
    ]);
    const stats = {
      consumer: namespaceParts(namespace).consumer,
      ready: perShard.reduce((a, s) => a + s.ready, 0),
      in_flight: perShard.reduce((a, s) => a + s.inFlight, 0),
      delayed: perShard.reduce((a, s) => a + s.delayed, 0),
      held,
      ...dead,
      nacked_total: totals.nacked ?? 0,
      dead_lettered_total: totals.dead_lettered ?? 0,
      expired_unprocessed_total: totals.expired_unprocessed ?? 0,
      commit_stalled_seconds: Math.max(0, ...Object.values(stall)),
    };
    return { stats, totals: totals.all };
  }

  /** A shard of the lease layer: its unfinished ranges, from the commit point on. */
  private async rangeShardStats(queue: string, shard: string, now: number) {
    const { ranges, messages } = this.deps;
    const [open, inDelayStore] = await Promise.all([
      ranges.commitHint(queue, shard).then((hint) => ranges.from(queue, shard, hint, STATS_RANGES)),
      messages.count(gsi.delayed(queue, shard)),
    ]);
    let ready = 0;
    let inFlight = 0;
    // Retries waiting in their ranges are delayed as much as those in the delay store.
    let delayed = inDelayStore;
    for (const range of open) {
      for (let i = 0; i < range.count; i++) {
        const status = entryStatus(range, i, now);
        if (status === 'free') ready++;
        else if (status === 'leased' || status === 'expired') inFlight++;
        else if (status === 'retrying') delayed++;
      }
    }
    const lowest = open.find((r) => !isFinished(r));
    const index = lowest ? firstUnfinished(lowest, now) : undefined;
    return {
      shard,
      ready,
      inFlight,
      delayed,
      age: ageSeconds(now, lowest?.enqueuedAt),
      commit: lowest && index !== undefined ? `${lowest.start}/${index}` : undefined,
    };
  }

  /** Each shard's `commit_stalled_seconds` against the sweep's marks; the sweep's look keeps new ones. */
  private async commitStall(
    namespace: string,
    perShard: readonly { shard: string; commit: string | undefined }[],
    now: number,
    keepMarks: boolean,
  ): Promise<Record<string, number>> {
    const positions = Object.fromEntries(perShard.map((s) => [s.shard, s.commit]));
    const marks = await this.deps.commitMarks.get(namespace);
    const stall = commitStall(marks, positions, now);
    // Written only when a commit point moved: a stalled or empty queue costs no write a minute.
    if (keepMarks && !sameMarks(stall.marks, marks)) await this.deps.commitMarks.set(namespace, stall.marks);
    return stall.stalledSeconds;
  }

  /**
   * The stream's listed shards, each with its state for the queue (a queue with Lambda consumers:
   * its slowest consumer's); the marks are read only after a reshard.
   */
  private async lineage(queue: string, config: QueueConfig, now: number) {
    const links = [...(await this.deps.shards.lineage(config.stream, now)).values()].filter((l) => l.listed);
    const readers = config.consumers.length
      ? config.consumers.map((c) => consumerNamespace(queue, c.name))
      : [queue];
    const progress = links.some((l) => l.closed)
      ? leastProgress(await Promise.all(readers.map((r) => this.deps.lineage.progress(r, now))))
      : new Map();
    return links.map((l) => ({
      id: l.id,
      state: shardState(l, progress.get(l.id)),
      parents: [...l.parents],
    }));
  }

  /** The shards of the queue's stream: a consumer's state is kept per shard of its queue's. */
  private shardsOf(name: string): Promise<string[]> {
    return this.deps.shards.shards(streamOf(this.deps.tenant, name));
  }

  private async deadStats(queue: string, now: number) {
    const m = this.deps.messages;
    const [dlqDepth, oldestDead, parked] = await Promise.all([
      m.count(gsi.dead(queue)),
      m.partition(gsi.dead(queue), { limit: 1 }),
      this.deps.keyOrder.parkedKeys(queue),
    ]);
    return {
      dlq_depth: dlqDepth,
      parked_keys: parked.length,
      dlq_oldest_age_seconds: ageSeconds(now, oldestDead[0]?.dead_at),
    };
  }
}

/** The range's lowest entry not yet acked or failed. */
function firstUnfinished(range: Range, now: number): number | undefined {
  for (let i = 0; i < range.count; i++) {
    const status = entryStatus(range, i, now);
    if (status !== 'acked' && status !== 'failed') return i;
  }
  return undefined;
}
