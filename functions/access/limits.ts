import type { Principal } from '../core/auth.js';
import type { QueueConfig, RateLimits } from '../core/config.js';
import type { Demand } from './quotas.js';

/** What a request draws on each quota it meets: `<unit>_per_sec` of rate_limits. */
type Amounts = Partial<Record<'requests' | 'bytes' | 'messages', number>>;

/** The demands of `amounts` on the queue's quotas and the API key's, for produce or consume. */
function demands(
  principal: Principal,
  queue: string,
  config: QueueConfig,
  action: 'produce' | 'consume',
  amounts: Amounts,
): Demand[] {
  const out: Demand[] = [];
  const add = (owner: string, limits: RateLimits | undefined) => {
    const limit = limits?.[action];
    for (const [unit, amount] of Object.entries(amounts) as [keyof Amounts, number][]) {
      const rate = limit?.[`${unit}_per_sec`];
      if (rate) out.push({ dimension: `${owner}:${action}:${unit}`, rate, amount });
    }
  };
  add(`queue:${queue}`, config.rate_limits);
  add(`key:${principal.name}`, principal.limits);
  return out;
}

/**
 * The rate quotas a request draws on: its queue's and its API key's, in requests and in
 * bytes, for produce or consume (docs/access-and-quotas.md, "Rate quotas").
 */
export function demandsFor(
  principal: Principal,
  queue: string,
  config: QueueConfig,
  action: 'produce' | 'consume',
  bytes: number,
): Demand[] {
  return demands(principal, queue, config, action, { requests: 1, bytes });
}

/**
 * What a produce of `count` messages draws on the message quotas, once its body is read: on a
 * shared stream every queue has one, its share of the shards' 1,000 records a second.
 */
export function messageDemands(
  principal: Principal,
  queue: string,
  config: QueueConfig,
  count: number,
): Demand[] {
  return demands(principal, queue, config, 'produce', { messages: count });
}

/** The byte demands only, for what a request turned out to move (a receive's payloads). */
export function byteDemands(demands: readonly Demand[], bytes: number): Demand[] {
  return demands.filter((d) => d.dimension.endsWith(':bytes')).map((d) => ({ ...d, amount: bytes }));
}
