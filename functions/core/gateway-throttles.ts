import type { QueueConfig, TenantConfig } from './config.js';

/**
 * What API Gateway refuses before the api function runs: each queue's HTTP routes have a
 * throttle of their own, so a queue flooded past its quota is refused at the gateway, at no
 * invocation, and cannot take the throttle of the tenant's other queues. The stack (infra) and
 * the local gateway (infra/local/http-gateway.ts) both build their limits here.
 *
 * An HTTP API throttles each route with its own token bucket: a route's own settings, else the
 * stage's default route settings. Across every API of the account in a region, API Gateway
 * allows 10,000 requests a second with a burst of 5,000 (a quota that can be raised).
 */

export interface Throttle {
  /** Requests a second, steady. */
  rate: number;
  /** The bucket: requests at once above the steady rate. */
  burst: number;
}

export interface RouteThrottle extends Throttle {
  /** API Gateway's route key, e.g. `POST /queues/jobs/messages`. */
  routeKey: string;
  queue: string;
}

export interface GatewayThrottles {
  /** Each route's throttle: a queue's produce route and its other routes. */
  routes: RouteThrottle[];
  /** The default route settings: the SQS endpoint, keys, the console and every other route. */
  others: Throttle;
  /** The steady requests a second of every route together, each at its limit. */
  totalRate: number;
  /** One line each for a limit of the account that the routes pass. */
  findings: string[];
}

/** API Gateway's account-level throttle per region, across all APIs (a quota that can be raised). */
export const ACCOUNT_RATE = 10_000;
export const ACCOUNT_BURST = 5_000;
/** HTTP API's default routes per API (a quota that can be raised). */
export const ROUTES_PER_API = 300;

/** A queue's route that declares no request quota gets what a whole tenant had before routes had their own. */
export const UNDECLARED = { rate: 500, burst: 1_000 } as const;

/**
 * The gateway lets through twice a declared quota: the function's own quota check
 * (access/quotas.ts) refuses precisely between the two, with Retry-After and a throttled count
 * in the queue's stats, and a flood past twice the quota never reaches the function.
 */
export const GATEWAY_OVER_QUOTA = 2;

/** The routes the stack declares besides the queues' own, under the default route settings. */
export const SHARED_ROUTE_KEYS = ['ANY /{proxy+}', 'GET /health', 'POST /'] as const;
const SHARED_ROUTES = SHARED_ROUTE_KEYS.length;

export function gatewayThrottles(tenant: TenantConfig): GatewayThrottles {
  const routes: RouteThrottle[] = [];
  for (const [queue, config] of Object.entries(tenant.queues)) {
    routes.push({ routeKey: produceRouteKey(queue), queue, ...routeThrottle(config, 'produce') });
    routes.push({ routeKey: queueRouteKey(queue), queue, ...routeThrottle(config, 'consume') });
  }
  const others = UNDECLARED;
  const totalRate = routes.reduce((sum, r) => sum + r.rate, 0) + SHARED_ROUTES * others.rate;
  const findings: string[] = [];
  if (totalRate > ACCOUNT_RATE)
    findings.push(
      `the queues' routes allow ${totalRate} requests a second together, past API Gateway's ${ACCOUNT_RATE} a ` +
        'second for the whole account in a region: declare rate_limits on the busiest queues, or ask for more ' +
        '(Service Quotas: Amazon API Gateway, "Throttle rate")',
    );
  if (routes.length + SHARED_ROUTES > ROUTES_PER_API)
    findings.push(
      `${routes.length + SHARED_ROUTES} routes pass HTTP API's ${ROUTES_PER_API} routes an API: split the ` +
        'queues across tenants, or ask for more (Service Quotas: Amazon API Gateway, "Routes per API")',
    );
  return { routes, others, totalRate, findings };
}

function routeThrottle(config: QueueConfig, action: 'produce' | 'consume'): Throttle {
  const declared = config.rate_limits?.[action]?.requests_per_sec;
  if (declared === undefined) return UNDECLARED;
  const rate = declared * GATEWAY_OVER_QUOTA;
  return { rate, burst: Math.max(1, Math.ceil(rate)) };
}

/** A queue's produce route: the one a producer's flood comes in by. */
export function produceRouteKey(queue: string): string {
  return `POST /queues/${queue}/messages`;
}

/** Every other route of a queue: receive, ack, nack, extend and its operations. */
export function queueRouteKey(queue: string): string {
  return `ANY /queues/${queue}/{proxy+}`;
}

/**
 * The route key API Gateway would match for a request, among those of `throttles`: a queue's
 * produce route, else its other routes, else none of a queue's (the default route settings).
 */
export function routeKeyOf(method: string, path: string, queues: ReadonlySet<string>): string | undefined {
  const match = /^\/queues\/([^/]+)\/(.+)$/.exec(path);
  if (!match?.[1] || !queues.has(match[1])) return undefined;
  const queue = match[1];
  return method === 'POST' && match[2] === 'messages' ? produceRouteKey(queue) : queueRouteKey(queue);
}

/** Which of the stack's shared routes a request not of a queue's own routes takes. */
export function sharedRouteKeyOf(method: string, path: string): (typeof SHARED_ROUTE_KEYS)[number] {
  if (method === 'GET' && path === '/health') return 'GET /health';
  if (method === 'POST' && path === '/') return 'POST /';
  return 'ANY /{proxy+}';
}
