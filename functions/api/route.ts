import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { Authenticator } from '../access/authenticator.js';
import type { KeyAdmin } from '../access/key-admin.js';
import { demandsFor } from '../access/limits.js';
import type { Demand, RateQuotas } from '../access/quotas.js';
import type { SqsAuthenticatorDeps } from '../access/sigv4-verifier.js';
import { type Action, type Principal, requireScope } from '../core/auth.js';
import { consumerNamespace, type QueueConfig } from '../core/config.js';
import { ConsumerNotFoundError, QueueNotFoundError, QuotaExceededError } from '../core/errors.js';
import type { RequestKind } from '../core/request-kinds.js';
import type { RuntimeConfig } from '../core/runtime-config.js';
import type { PullDelivery } from '../delivery/pull-delivery.js';
import { countThrottled } from '../observability/metrics.js';
import type { Alarms } from '../operations/alarms.js';
import type { DeadLetterErrors } from '../operations/dead-letter-errors.js';
import type { DeadLetters } from '../operations/dead-letters.js';
import type { DlqRetentions } from '../operations/dlq-retention.js';
import type { ParkedKeys } from '../operations/parked-keys.js';
import type { QueueAdmin } from '../operations/queue-admin.js';
import type { QueueStats } from '../operations/queue-stats.js';
import type { Redrives } from '../operations/redrive.js';
import type { Replays } from '../operations/replay.js';
import type { Traces } from '../operations/traces.js';
import type { Usage } from '../operations/usage.js';
import type { Producer } from '../produce/producer.js';
import type { Counters } from '../store/counters.js';
import { consumerQuerySchema } from '../wire/requests.js';
import { type HttpResponse, header, pathParam, validate } from './http.js';

/** What every route can use, built once per function instance. */
export interface ApiServices {
  config: RuntimeConfig;
  auth: Authenticator;
  quotas: RateQuotas;
  keyAdmin: KeyAdmin;
  producer: Producer;
  consumer: PullDelivery;
  deadLetters: DeadLetters;
  deadLetterErrors: DeadLetterErrors;
  parkedKeys: ParkedKeys;
  stats: QueueStats;
  queueAdmin: QueueAdmin;
  redrives: Redrives;
  replays: Replays;
  retentions: DlqRetentions;
  trace: Traces;
  usage: Usage;
  /** The queues' alarms as the sweep last evaluated them. */
  alarms: Alarms;
  /** The queue totals a request adds to outside the services above (its 429s). */
  counters: Counters;
  /** Who signed a request to the SQS endpoint (its SQS credentials). */
  /** What the SQS endpoint's verifier of signed requests reads (access/sigv4-verifier.ts). */
  sqsAuth: SqsAuthenticatorDeps;
  logger: Logger;
  metrics: Metrics;
}

export interface QueueRequest {
  event: APIGatewayProxyEventV2;
  services: ApiServices;
  principal: Principal;
  queue: { name: string; config: QueueConfig };
  /** The rate quotas this request drew on (produce and consume routes). */
  demands: Demand[];
}

export interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  handler: (event: APIGatewayProxyEventV2, services: ApiServices) => Promise<HttpResponse>;
}

/**
 * A route on `/queues/{queue}/...`: authenticates (401), finds the queue (404), checks the
 * scope for `action` on it (403), then runs `handler`; counted as a request of `kind`.
 */
export function queueRoute(
  method: Route['method'],
  path: string,
  action: Action,
  handler: (req: QueueRequest) => Promise<HttpResponse>,
  kind: RequestKind = 'other',
): Route {
  return authenticated(method, path, (event, services, principal) =>
    onQueue(
      { event, services, principal },
      pathParam(event, 'queue'),
      action,
      Buffer.byteLength(event.body ?? ''),
      handler,
      kind,
    ),
  );
}

/**
 * A request of `principal` on queue `name`, whichever protocol it came in (this API's routes,
 * or the SQS endpoint): the queue (404), the scope for `action` (403), the rate quotas its
 * `bodyBytes` draw on (429, counted per queue and key), then `run`. It counts in the queue's
 * usage as a request of `kind`, refused over a quota or not (buffered: no write of its own).
 */
export async function onQueue<T>(
  from: { event: APIGatewayProxyEventV2; services: ApiServices; principal: Principal },
  name: string,
  action: Action,
  bodyBytes: number,
  run: (req: QueueRequest) => Promise<T>,
  kind: RequestKind = 'other',
): Promise<T> {
  const { services, principal } = from;
  const config = Object.hasOwn(services.config.tenant.queues, name)
    ? services.config.tenant.queues[name]
    : undefined;
  if (!config) throw new QueueNotFoundError(name);
  requireScope(principal, action, name);
  await services.counters.addRequest(name, kind);
  const demands = action === 'admin' ? [] : demandsFor(principal, name, config, action, bodyBytes);
  try {
    await services.quotas.admit(demands);
    return await run({ ...from, queue: { name, config }, demands });
  } catch (error) {
    if (error instanceof QuotaExceededError) {
      countThrottled(services.metrics, name, principal.name);
      await services.counters.addThrottled(name, principal.name);
    }
    throw error;
  }
}

export interface OperationsRequest extends QueueRequest {
  /** The message state operated on: the queue's own name, or its consumer's namespace. */
  state: string;
  /** The Lambda consumer `?consumer=` named, when it did. */
  consumer?: string;
}

/**
 * An owner's tool on a queue (scope `admin`), which works on the queue's own message state or,
 * with `?consumer=<name>`, on that of one of its Lambda consumers (404 CONSUMER_NOT_FOUND for a
 * consumer the queue does not declare). The scope is checked first, so an unknown consumer is
 * only told to a key that may administer the queue.
 */
export function operationsRoute(
  method: Route['method'],
  path: string,
  handler: (req: OperationsRequest) => Promise<HttpResponse>,
): Route {
  return queueRoute(method, path, 'admin', async (req) => {
    const { consumer } = validate(consumerQuerySchema, req.event.queryStringParameters ?? {});
    if (consumer === undefined) return handler({ ...req, state: req.queue.name });
    if (!req.queue.config.consumers.some((c) => c.name === consumer))
      throw new ConsumerNotFoundError(req.queue.name, consumer);
    return handler({ ...req, state: consumerNamespace(req.queue.name, consumer), consumer });
  });
}

/** Every route but /health starts here: who is asking (401 when nobody we know). */
function authenticated(
  method: Route['method'],
  path: string,
  handler: (
    event: APIGatewayProxyEventV2,
    services: ApiServices,
    principal: Principal,
  ) => Promise<HttpResponse>,
): Route {
  return {
    method,
    path,
    handler: async (event, services) =>
      handler(event, services, await services.auth.authenticate(header(event, 'authorization'))),
  };
}

export interface TenantRequest {
  event: APIGatewayProxyEventV2;
  services: ApiServices;
  principal: Principal;
}

/** A tenant-wide route: only keys with `admin:*` may use it. */
export function tenantRoute(
  method: Route['method'],
  path: string,
  handler: (req: TenantRequest) => Promise<HttpResponse>,
): Route {
  return authenticated(method, path, async (event, services, principal) => {
    requireScope(principal, 'admin', '*');
    return handler({ event, services, principal });
  });
}
