import { consumerNamespace, namespaceParts, type QueueConfig, type TenantConfig } from '../core/config.js';
import { TIER_STANDARDS } from '../core/tiers.js';
import {
  ALARM_OWNERS,
  type AlarmKind,
  alarmName,
  backlogAgeLimitSeconds,
  dlqExpiringSeconds,
  ORDERED_STALL_SECONDS,
  OWNER_LABEL,
  REDELIVERY_MIN_RECEIVED,
  REDELIVERY_PERCENT,
  SLOW_HANDLED_PERCENT,
  STALE_RECEIPT_MIN,
  STALE_RECEIPT_PERCENT,
} from './alarm-rules.js';
import type { AlarmedGauge } from './metrics.js';

/**
 * A queue's alarms (docs/alarms.md), which the sweep evaluates on each gauge pass from what it
 * measured: its gauges, and what the queue's running totals grew by since the pass before. A
 * CloudWatch alarm bills $0.10 a metric a month whether or not its queue is used: evaluated here,
 * a tenant's queues alarm for nothing while idle.
 */

/** Totals kept for the alarms alone, beside the stats' own (store/counters.ts addHandling). */
export type HandlingCount = 'delivered' | 'redelivered' | 'handled' | 'slow_handled';

/** The running totals (store/counters.ts) whose growth the rates are read from. */
export const ALARM_COUNTS = [
  'delivered',
  'redelivered',
  'acked',
  'nacked',
  'stale_receipts',
  'handled',
  'slow_handled',
  'throttled',
] as const;
export type AlarmCount = (typeof ALARM_COUNTS)[number];

/** What the sweep measured of a queue (or a Lambda consumer's namespace) on one gauge pass. */
export interface AlarmReading {
  gauges: Partial<Record<AlarmedGauge, number>>;
  /** What the running totals grew by since the pass before, over `seconds`; none on a sweep's first pass. */
  counts?: Partial<Record<AlarmCount, number>> & { seconds: number };
}

export interface QueueAlarm {
  /** `leaseq-<tenant>/<namespace>/<kind>`: the owners' and the pager's subscriptions filter on it. */
  name: string;
  namespace: string;
  kind: AlarmKind;
  /** Fires when the measure is above this... */
  threshold: number;
  /** ...on every pass for this long (0: on the first pass that sees it). */
  forSeconds: number;
  /**
   * A firing alarm clears once its measure has stayed under for this long (0: on the first pass
   * under): a count of what happened since the pass before would otherwise clear a minute after
   * each event, and page again at the next.
   */
  clearSeconds: number;
  /** alarms.page hears it too (the queue's tier). */
  pages: boolean;
  /** Its owner first, then what it means and the first thing to look at. */
  description: string;
  /** The measure, or undefined when this pass has no data for it (the alarm keeps its state). */
  measure(reading: AlarmReading): number | undefined;
}

/** An alarm on a count of events clears after 5 minutes without one, as a 5-minute period did. */
const COUNTED_CLEAR_SECONDS = 300;

const gauge =
  (name: AlarmedGauge) =>
  (r: AlarmReading): number =>
    r.gauges[name] ?? 0;

/**
 * A share in percent of the pass's counts, 0 below `least` a minute (a rate of a handful is noise),
 * none without counts.
 */
const share =
  (part: (c: Counts) => number, whole: (c: Counts) => number, least: number) =>
  (r: AlarmReading): number | undefined => {
    const c = r.counts;
    if (!c) return undefined;
    const of = whole(c);
    return of > 0 && of >= least * Math.max(1, c.seconds / 60) ? (100 * part(c)) / of : 0;
  };
type Counts = NonNullable<AlarmReading['counts']>;
const n = (c: Counts, name: AlarmCount) => c[name] ?? 0;

/** Every alarm the sweep evaluates for the tenant's queues and their Lambda consumers. */
export function queueAlarms(tenant: TenantConfig): QueueAlarm[] {
  return Object.entries(tenant.queues).flatMap(([q, config]) => alarmsOfQueue(tenant.tenant, q, config));
}

function alarmsOfQueue(tenant: string, q: string, config: QueueConfig): QueueAlarm[] {
  const alarms: QueueAlarm[] = [];
  const add = (
    namespace: string,
    kind: AlarmKind,
    rule: Omit<QueueAlarm, 'name' | 'namespace' | 'kind' | 'pages' | 'forSeconds' | 'clearSeconds'> & {
      pages?: boolean;
      forSeconds?: number;
      clearSeconds?: number;
    },
  ) =>
    alarms.push({
      ...rule,
      name: alarmName(tenant, namespace, kind),
      namespace,
      kind,
      pages: rule.pages ?? false,
      forSeconds: rule.forSeconds ?? 0,
      clearSeconds: rule.clearSeconds ?? 0,
      description: `${OWNER_LABEL[ALARM_OWNERS[kind]]}: ${rule.description}`,
    });
  const tier = TIER_STANDARDS[config.tier];
  const backlogLimit = backlogAgeLimitSeconds(config);
  const dlqAge = tier.dlqAgeAlarmSeconds;
  // Each reader of the queue: the queue itself (pull), or each of its Lambda consumers.
  const readers = config.consumers.length
    ? config.consumers.map((c) => ({
        ns: consumerNamespace(q, c.name),
        where: `${q}'s Lambda consumer ${c.name}`,
        query: `?consumer=${c.name}`,
        lease: { seconds: c.timeout_seconds, what: 'an invocation (timeout_seconds)' },
        who: `its Lambda consumer ${c.name}`,
      }))
    : [
        {
          ns: q,
          where: q,
          query: '',
          lease: { seconds: config.lease_seconds, what: 'receive and ack (lease_seconds)' },
          who: 'consumers',
        },
      ];

  for (const { ns, where, query, lease, who } of readers) {
    add(ns, 'redelivery-rate', {
      description:
        `More than ${REDELIVERY_PERCENT} % of the messages delivered from ${where} were redeliveries for ` +
        `2 minutes: ${who} failing, nacking or letting leases expire.`,
      threshold: REDELIVERY_PERCENT,
      forSeconds: 60,
      measure: share(
        (c) => n(c, 'redelivered'),
        (c) => n(c, 'delivered'),
        REDELIVERY_MIN_RECEIVED,
      ),
    });
    add(ns, 'handler-duration', {
      description:
        `More than 1 % of the handlers of ${where} ran past half the lease between ${lease.what}, ` +
        `${lease.seconds / 2} s (its p99 passed it): handlers are slowing towards expired leases and ` +
        'redeliveries. Look at what the handler waits on; extend leases (heartbeats) or raise the lease.',
      threshold: SLOW_HANDLED_PERCENT,
      measure: share(
        (c) => n(c, 'slow_handled'),
        (c) => n(c, 'handled'),
        0,
      ),
    });
    if (dlqAge !== undefined) {
      add(ns, 'dlq-oldest-age', {
        description:
          `A dead letter of ${where} has waited over ${minutes(dlqAge)}: redrive it or purge it ` +
          `(GET /queues/${q}/dlq${query}). Owner: ${config.owner ?? 'none named'}.`,
        threshold: dlqAge,
        pages: true,
        measure: gauge('dlq_oldest_age'),
      });
      const expiring = dlqExpiringSeconds(config);
      if (expiring !== undefined)
        add(ns, 'dlq-expiring', {
          description:
            `The oldest dead letter of ${where} leaves its DLQ within a day (retention ` +
            `${config.dlq_retention_hours} h): redrive it, or raise dlq_retention_hours before it goes.`,
          threshold: expiring,
          pages: true,
          measure: gauge('dlq_oldest_age'),
        });
      add(ns, 'dlq-expired', {
        description: `Dead letters of ${where} reached the end of their DLQ retention unhandled: they are gone.`,
        threshold: 0,
        clearSeconds: COUNTED_CLEAR_SECONDS,
        pages: true,
        measure: gauge('dlq_expired'),
      });
    }
    if (config.ordered) {
      add(ns, 'ordered-stall', {
        description:
          `A shard of ${where} has not moved past its oldest unfinished message for over ` +
          `${ORDERED_STALL_SECONDS / 60} minutes: its key's later messages (its shard's too, in a Lambda ` +
          `consumer's batches) wait behind it. Trace it (GET /queues/${q}/messages/{id}${query}), see the ` +
          `parked keys (GET /queues/${q}/keys/parked${query}) and stats' commit_stalled_seconds_by_shard.`,
        threshold: ORDERED_STALL_SECONDS,
        measure: gauge('commit_stalled_seconds'),
      });
      add(ns, 'parked-keys', {
        description:
          `A key of ${where} is parked behind its dead letter; its later messages are held until the ` +
          `dead letter is redriven or the key skipped (GET /queues/${q}/keys/parked` +
          `${ns === q ? '' : `?consumer=${namespaceParts(ns).consumer}`}).`,
        threshold: 0,
        measure: gauge('parked_keys'),
      });
    }
  }
  // Push queues are consumed by their Lambda consumers, never by receive: no receipts.
  if (config.consumers.length === 0)
    add(q, 'stale-receipt-rate', {
      description:
        `More than ${STALE_RECEIPT_PERCENT} % of the receipts sent back to ${q} (ack, nack, extend) were ` +
        'stale for 2 minutes: handlers finish after their lease ran out, so their messages run twice. ' +
        'Extend leases while handling (heartbeats) or raise lease_seconds.',
      threshold: STALE_RECEIPT_PERCENT,
      forSeconds: 60,
      measure: share(
        (c) => n(c, 'stale_receipts'),
        (c) => n(c, 'acked') + n(c, 'nacked') + n(c, 'stale_receipts'),
        STALE_RECEIPT_MIN,
      ),
    });
  add(q, 'oldest-unacked-age', {
    description:
      `The oldest message of ${q} not yet acked has waited over ${backlogLimit / 3600} h, half its ` +
      'retention, for 10 minutes.',
    threshold: backlogLimit,
    forSeconds: 600,
    measure: gauge('oldest_unacked_age'),
  });
  add(q, 'quota-throttled', {
    description:
      `Requests to ${q} were refused over its quota (429 QUOTA_EXCEEDED: rate_limits, or the storage ` +
      'quota while consumers fall behind) in the last 5 minutes. Slow the producers (honour Retry-After), ' +
      'or raise the quota in the tenant file.',
    threshold: 0,
    clearSeconds: COUNTED_CLEAR_SECONDS,
    measure: (r) => (r.counts ? n(r.counts, 'throttled') : undefined),
  });
  add(q, 'expired-unprocessed', {
    description: `Records of ${q} expired from its stream before they were admitted: messages were lost.`,
    threshold: 0,
    clearSeconds: COUNTED_CLEAR_SECONDS,
    // On a critical queue a lost message is an incident.
    pages: tier.expiredPages,
    measure: gauge('expired_unprocessed'),
  });
  add(q, 'drift', {
    description:
      `A durability setting of ${q}'s stream or of the table is below what the stack set (the ` +
      "sweep's log names it): redeploy, or restore it by hand, before a loss it would not cover.",
    threshold: 0,
    pages: config.tier === 'critical',
    measure: gauge('drift'),
  });
  return alarms;
}

/** `15 min`, `1 h`: an age threshold as a description says it. */
function minutes(seconds: number): string {
  return seconds % 3600 === 0 ? `${seconds / 3600} h` : `${seconds / 60} min`;
}
