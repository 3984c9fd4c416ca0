import { HOURS_PER_MONTH, PRICES_AS_OF, USAGE_PRICES } from './prices.js';
import { REQUEST_KINDS, requestCounter } from './request-kinds.js';
import { type RollupSample, USAGE_COUNTERS, type UsageCounter } from './usage-sample.js';

/**
 * Usage over a range (GET /usage): the difference of a queue's running totals between the samples
 * nearest each end of the range (core/usage-sample.ts), and the cost that implies at list prices.
 */

const HOUR_MS = 3_600_000;
/** AWS bills storage in GB of 2^30 bytes. */
const GB = 1024 ** 3;

/**
 * The running totals at `t`: those of the sample nearest it among `samples` (those around `t`).
 * Before a queue's first sample they are all zero; with no sample at all (a queue never used),
 * zero too. Answers the totals and the time they were sampled at.
 */
export function totalsAt(
  t: number,
  samples: readonly RollupSample[],
): { at: number; totals: Record<UsageCounter, number> } {
  const sorted = [...samples].sort((a, b) => a.at - b.at);
  const before = sorted.filter((s) => s.at <= t).at(-1);
  const after = sorted.find((s) => s.at > t);
  const zero = { at: t, totals: zeroTotals() };
  // A queue's first sample may also be its latest: either copy marks it.
  const origin = after !== undefined && sorted.some((s) => s.at === after.at && s.origin);
  if (!before && (!after || origin)) return zero;
  const nearest =
    before && after ? (t - before.at <= after.at - t ? before : after) : ((before ?? after) as RollupSample);
  return { at: nearest.at, totals: nearest };
}

function zeroTotals(): Record<UsageCounter, number> {
  return Object.fromEntries(USAGE_COUNTERS.map((name) => [name, 0])) as Record<UsageCounter, number>;
}

export interface UsageFigures {
  produced: { messages: number; bytes: number };
  consumed: { messages: number; bytes: number };
  stored_gb_hours: { log: number; dlq: number };
  requests: Record<(typeof REQUEST_KINDS)[number] | 'total' | 'throttled', number>;
  cost_usd: { requests: number; storage: number; total: number };
}

/** What happened between two samples' totals, and its cost. */
export function usageBetween(
  start: Record<UsageCounter, number>,
  end: Record<UsageCounter, number>,
): UsageFigures {
  const d = (name: UsageCounter) => Math.max(0, end[name] - start[name]);
  const requests = Object.fromEntries(REQUEST_KINDS.map((kind) => [kind, d(requestCounter(kind))]));
  const total = Object.values(requests).reduce((a, n) => a + n, 0);
  const gbHours = (name: UsageCounter) => d(name) / GB / HOUR_MS;
  return priced({
    produced: { messages: d('produced'), bytes: d('produced_bytes') },
    consumed: { messages: d('acked'), bytes: d('acked_bytes') },
    stored_gb_hours: { log: gbHours('log_byte_ms'), dlq: gbHours('dlq_byte_ms') },
    requests: { ...requests, total, throttled: d('throttled') } as UsageFigures['requests'],
  });
}

/**
 * The cost at list prices: each request an API Gateway HTTP request and a Lambda invocation (their
 * duration, DynamoDB's request units and Kinesis's shard-hours are not in it), each GB-hour held
 * at DynamoDB's storage price.
 */
function priced(f: Omit<UsageFigures, 'cost_usd'>): UsageFigures {
  const perRequest = USAGE_PRICES.apiGatewayHttpRequest.usd + USAGE_PRICES.lambdaRequest.usd;
  const requests = f.requests.total * perRequest;
  const storage =
    ((f.stored_gb_hours.log + f.stored_gb_hours.dlq) / HOURS_PER_MONTH) *
    USAGE_PRICES.dynamodbStorageGbMonth.usd;
  return { ...f, cost_usd: { requests, storage, total: requests + storage } };
}

/** The tenant's total: every queue's figures added up. */
export function sumUsage(all: readonly UsageFigures[]): UsageFigures {
  const add = <T extends Record<string, number>>(pick: (f: UsageFigures) => T): T => {
    const out: Record<string, number> = {};
    for (const f of all) for (const [k, v] of Object.entries(pick(f))) out[k] = (out[k] ?? 0) + v;
    return out as T;
  };
  const zero = usageBetween(zeroTotals(), zeroTotals());
  if (!all.length) return zero;
  return {
    produced: add((f) => f.produced),
    consumed: add((f) => f.consumed),
    stored_gb_hours: add((f) => f.stored_gb_hours),
    requests: add((f) => f.requests),
    cost_usd: add((f) => f.cost_usd),
  };
}

/** What the answer says of its own figures. */
export const USAGE_ACCURACY = {
  exact: ['produced', 'consumed', 'requests'],
  estimated: ['stored_gb_hours', 'cost_usd'],
  prices_as_of: PRICES_AS_OF,
};
