import type { Principal } from '../core/auth.js';
import type { QueueConfig, RateLimits } from '../core/config.js';
import type { Demand } from './quotas.js';

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
  const demands: Demand[] = [];
  const add = (owner: string, limits: RateLimits | undefined) => {
    const limit = limits?.[action];
    if (limit?.requests_per_sec)
      demands.push({ dimension: `${owner}:${action}:requests`, rate: limit.requests_per_sec, amount: 1 });
    if (limit?.bytes_per_sec)
      demands.push({ dimension: `${owner}:${action}:bytes`, rate: limit.bytes_per_sec, amount: bytes });
  };
  add(`queue:${queue}`, config.rate_limits);
  add(`key:${principal.name}`, principal.limits);
  return demands;
}

/** The byte demands only, for what a request turned out to move (a receive's payloads). */
export function byteDemands(demands: readonly Demand[], bytes: number): Demand[] {
  return demands.filter((d) => d.dimension.endsWith(':bytes')).map((d) => ({ ...d, amount: bytes }));
}
