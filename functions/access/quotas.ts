import { QuotaExceededError } from '../core/errors.js';
import { TokenBucket } from '../core/token-bucket.js';
import type { RateWindows } from '../store/rate-windows.js';

/**
 * Rate quotas (requests and bytes a second, per API key and per queue). Each function instance
 * enforces them with its own token buckets, so one instance is exact at once; about once a
 * second it adds its usage to a shared per-second counter and drains what the other instances
 * used, so the tenant as a whole converges on the limit within a second or so.
 */

export interface Demand {
  /** Names the quota, e.g. `queue:jobs:produce:bytes`. */
  dimension: string;
  /** Tokens a second (and the burst: one second's worth). */
  rate: number;
  amount: number;
}

interface Dimension {
  bucket: TokenBucket;
  pending: number;
  window: number;
  own: number;
  othersDrained: number;
  syncedAt: number;
}

const SYNC_MS = 1000;

export class RateQuotas {
  private readonly dims = new Map<string, Dimension>();

  constructor(
    private readonly windows: RateWindows,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes every demand, or none: a 429 with the longest wait among those short of tokens. */
  async admit(demands: readonly Demand[]): Promise<void> {
    const now = this.now();
    const active = demands.filter((d) => d.rate > 0 && d.amount > 0);
    await Promise.all(active.map((d) => this.sync(d, now)));
    const taken: Demand[] = [];
    let over: Demand | undefined;
    let wait = 0;
    for (const d of active) {
      const check = this.dimension(d, now).bucket.take(d.amount, now);
      if (check.ok) taken.push(d);
      else {
        over ??= d;
        wait = Math.max(wait, check.retryAfterSeconds);
      }
    }
    if (over) {
      // All or nothing: give back what the other quotas of this request already took.
      for (const d of taken) this.dimension(d, now).bucket.drain(-d.amount, now);
      throw new QuotaExceededError(`over the rate quota ${over.dimension}`, wait);
    }
    for (const d of active) this.dimension(d, now).pending += d.amount;
  }

  /** Spends what a request moved after the fact (a receive's bytes); later requests wait for it. */
  spend(demands: readonly Demand[]): void {
    const now = this.now();
    for (const d of demands) {
      if (d.rate <= 0 || d.amount <= 0) continue;
      const dim = this.dimension(d, now);
      dim.bucket.drain(d.amount, now);
      dim.pending += d.amount;
    }
  }

  private dimension(d: Demand, now: number): Dimension {
    let dim = this.dims.get(d.dimension);
    if (!dim || dim.bucket.rate !== d.rate) {
      dim = {
        bucket: new TokenBucket(d.rate, d.rate, now),
        pending: 0,
        window: 0,
        own: 0,
        othersDrained: 0,
        syncedAt: now,
      };
      this.dims.set(d.dimension, dim);
    }
    return dim;
  }

  /** About once a second: share this instance's usage and spend what the others used. */
  private async sync(d: Demand, now: number): Promise<void> {
    const dim = this.dimension(d, now);
    if (now - dim.syncedAt < SYNC_MS) return;
    const second = Math.floor(now / 1000);
    if (second !== dim.window) {
      dim.window = second;
      dim.own = 0;
      dim.othersDrained = 0;
    }
    const used = dim.pending;
    dim.pending = 0;
    dim.own += used;
    dim.syncedAt = now;
    const total = await this.windows.add(d.dimension, second, used);
    const others = Math.max(0, total - dim.own);
    dim.bucket.drain(others - dim.othersDrained, now);
    dim.othersDrained = others;
  }
}
