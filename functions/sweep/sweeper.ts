import type { Logger } from '@aws-lambda-powertools/logger';
import type { Failures } from '../consume/failures.js';
import type { KeyOrder } from '../consume/key-order.js';
import { mapLimit } from '../core/async.js';
import { consumerNamespace, type QueueConfig, streamName, type TenantConfig } from '../core/config.js';
import type { Envelope } from '../core/envelope.js';
import type { ShardDirectory, StreamLog } from '../log/stream.js';
import type { Redrives } from '../operations/redrive.js';
import type { Counters } from '../store/counters.js';
import { gsi, timeSortKey } from '../store/keys.js';
import type { MessageStore, StateItem } from '../store/messages.js';

/**
 * sweep: puts due messages from the delay store back into the log (the next entry of each),
 * and turns expired leases into failed attempts.
 */

export interface SweeperDeps {
  tenant: TenantConfig;
  messages: MessageStore;
  counters: Counters;
  log: StreamLog;
  shards: ShardDirectory;
  keyOrder: KeyOrder;
  failures: Failures;
  redrives: Redrives;
  logger: Logger;
  now?: () => number;
}

export interface SweepReport {
  requeued: number;
  expired: number;
  /** Held messages returned to the window after their key was released. */
  released: number;
  /** Dead letters moved back by redrive jobs. */
  redriven: number;
}

/** Items handled per partition per pass; a pass repeats while partitions stay full. */
const PAGE = 100;

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
  constructor(private readonly deps: SweeperDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  async sweepOnce(): Promise<SweepReport> {
    const report: SweepReport = { requeued: 0, expired: 0, released: 0, redriven: 0 };
    for (const ns of namespaces(this.deps.tenant)) {
      // Redrive jobs are started on a queue's own DLQ (a consumer's DLQ has no API yet).
      if (ns.consumer === undefined) report.redriven += await this.deps.redrives.runPass(ns.queue, ns.config);
      const shards = await this.deps.shards.shards(streamName(this.deps.tenant.tenant, ns.queue));
      await Promise.all(
        shards.map(async (shard) => {
          report.expired += await this.expireLeases(ns.name, ns.config, shard);
          report.requeued += await this.requeueDue(ns, shard);
          if (ns.config.ordered)
            report.released += await this.deps.keyOrder.releaseStragglers(ns.name, shard);
        }),
      );
    }
    return report;
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
      const bodies = await this.deps.messages.bodies(due);
      const envelopes: Envelope[] = due.map((item) => {
        const body = bodies.get(item.pk);
        if (!body) throw new Error(`the body of ${item.message_id} is missing`);
        return {
          v: 1,
          ...body,
          queue: ns.queue,
          attempt: item.attempt,
          entry: item.entry + 1,
          enqueued_at: new Date(now).toISOString(),
          ...(ns.consumer !== undefined ? { for: ns.consumer } : {}),
        };
      });
      // The new entry first; the delay store item is retired only once it is in the log.
      const appended = await this.deps.log.append(
        streamName(this.deps.tenant.tenant, ns.queue),
        envelopes.map((env) => ({
          partitionKey: env.key ?? env.message_id,
          data: Buffer.from(JSON.stringify(env)),
        })),
        { preserveKeyOrder: ns.config.ordered },
      );
      const landed = due.filter((_, i) => appended[i]?.ok);
      await mapLimit(landed, 16, (item) =>
        this.deps.messages.markRequeued(ns.name, item.message_id, item.entry),
      );
      total += landed.length;
      if (landed.length < due.length || due.length < PAGE) return total;
    }
  }

  private async expireLeases(queue: string, config: QueueConfig, shard: string): Promise<number> {
    let total = 0;
    for (;;) {
      const now = this.now();
      const expired = await this.deps.messages.partition(gsi.leased(queue, shard), {
        limit: PAGE,
        below: timeSortKey(now + 1, ''),
      });
      // The index is eventually consistent: the write decides, with the lease's own expiry.
      const moved = await mapLimit(expired, 16, (item) => this.expire(queue, config, item, now));
      // Failures.fail has already given the window slots back.
      const n = moved.filter(Boolean).length;
      total += n;
      if (expired.length < PAGE || n === 0) return total;
    }
  }

  private async expire(queue: string, config: QueueConfig, item: StateItem, now: number): Promise<boolean> {
    if ((item.lease_expires_at ?? Number.POSITIVE_INFINITY) > now) return false;
    const outcome = await this.deps.failures.fail(
      queue,
      config,
      item,
      {
        generation: item.gen,
        reason: 'lease_expired',
        deliveredAt: item.delivered_at ?? now,
        lease: 'expired',
      },
      now,
    );
    return outcome !== undefined;
  }
}
