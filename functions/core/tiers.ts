import type { QueueConfig, TenantConfig } from './config.js';
import type { ExceptionConfig } from './tier-exceptions.js';

/**
 * A queue's tier says what its messages are worth (docs/tiers.md): `ephemeral` (losing some is
 * acceptable: no paging, no extended retention), `standard` (an owner pages on its dead letters),
 * `critical` (longer retention, faster paging, messages expiring unprocessed are an incident).
 */
export const TIERS = ['ephemeral', 'standard', 'critical'] as const;
export type Tier = (typeof TIERS)[number];

/** What a queue that names no retention gets. */
export const TIER_DEFAULTS: Record<Tier, { retention_hours: number; dlq_retention_hours: number }> = {
  ephemeral: { retention_hours: 24, dlq_retention_hours: 48 },
  standard: { retention_hours: 24, dlq_retention_hours: 336 },
  // Three days: a consumer down from a Friday evening to a Monday morning loses nothing past its window.
  critical: { retention_hours: 72, dlq_retention_hours: 336 },
};

export interface TierStandard {
  /** An owning team and a paging route are required. */
  owned: boolean;
  /** The least each durability setting may be. */
  minimum: Partial<Record<'retention_hours' | 'dlq_retention_hours', number>>;
  /** The DLQ's retention is at least this many times the log's, so a dead letter outlives its replay window. */
  dlqRetentionFactor?: number;
  /** The oldest dead letter's age that pages; none for ephemeral. */
  dlqAgeAlarmSeconds?: number;
  /** Records expiring unadmitted page the on-call route, not only the platform team. */
  expiredPages: boolean;
}

export const TIER_STANDARDS: Record<Tier, TierStandard> = {
  ephemeral: { owned: false, minimum: {}, expiredPages: false },
  standard: {
    owned: true,
    minimum: { dlq_retention_hours: 168 },
    dlqRetentionFactor: 2,
    dlqAgeAlarmSeconds: 3600,
    expiredPages: false,
  },
  critical: {
    owned: true,
    minimum: { retention_hours: 72, dlq_retention_hours: 336 },
    dlqRetentionFactor: 2,
    dlqAgeAlarmSeconds: 900,
    expiredPages: true,
  },
};

export type ExceptionSetting = ExceptionConfig['setting'];

/** One rule a tenant file breaks: where, which rule, and how to fix it, in one line. */
export interface TierFinding {
  path: string;
  rule: string;
  fix: string;
  /** The queue and setting an exception would cover; none for an expired exception. */
  covers?: { queue: string; setting: ExceptionSetting };
}

export function findingLine(f: TierFinding): string {
  return `${f.path}: ${f.rule} (fix: ${f.fix})`;
}

/** The day an exception ends (UTC midnight, epoch ms): from then on it covers nothing. */
export function exceptionEnds(e: Pick<ExceptionConfig, 'expires'>): number {
  return Date.parse(`${e.expires}T00:00:00Z`);
}

/**
 * What a tenant file breaks of its queues' tier standards, after its unexpired exceptions, and
 * its expired exceptions. Synth refuses on any; `npm start` prints them (and refuses with --strict).
 */
export function tierFindings(
  tenant: TenantConfig,
  exceptions: readonly ExceptionConfig[],
  now: number,
): TierFinding[] {
  const findings = Object.entries(tenant.queues).flatMap(([name, q]) => queueFindings(tenant, name, q));
  const live = exceptions.filter((e) => exceptionEnds(e) > now);
  const waived = (f: TierFinding) =>
    f.covers !== undefined && live.some((e) => e.queue === f.covers?.queue && e.setting === f.covers.setting);
  const expired = exceptions.flatMap((e, i): TierFinding[] =>
    exceptionEnds(e) > now
      ? []
      : [
          {
            path: `exceptions[${i}]`,
            rule: `the exception for queues.${e.queue}.${e.setting} (${e.owner}) expired on ${e.expires}`,
            fix: `restore the setting to its tier's standard, or renew the exception with a new "expires"`,
          },
        ],
  );
  return [...findings.filter((f) => !waived(f)), ...expired];
}

/** Someone hears a queue's dead letters: the on-call route, its consuming team, or every alarm. */
function hasPagingRoute(tenant: TenantConfig): boolean {
  const { page, consuming_team, email } = tenant.alarms;
  return page.length + consuming_team.length + email.length > 0;
}

function queueFindings(tenant: TenantConfig, name: string, q: QueueConfig): TierFinding[] {
  const standard = TIER_STANDARDS[q.tier];
  const at = `queues.${name}`;
  const out: TierFinding[] = [];
  if (standard.owned && q.owner === undefined)
    out.push({
      path: `${at}.owner`,
      rule: `a ${q.tier} queue names the team that owns it and its dead letters`,
      fix: `add "owner": "<team>", or "tier": "ephemeral" if losing its messages is acceptable`,
      covers: { queue: name, setting: 'owner' },
    });
  if (standard.owned && !hasPagingRoute(tenant))
    out.push({
      path: 'alarms.page',
      rule: `a ${q.tier} queue (${name}) pages someone when its dead letters wait`,
      fix: 'add an on-call address to alarms.page',
      covers: { queue: name, setting: 'owner' },
    });
  for (const [setting, least] of Object.entries(standard.minimum) as [ExceptionSetting, number][]) {
    const value = q[setting as keyof typeof standard.minimum];
    if (value < least)
      out.push({
        path: `${at}.${setting}`,
        rule: `a ${q.tier} queue keeps ${setting} at ${least} or more (it is ${value})`,
        fix: `raise it to ${least}, or add an exception with an owner, a reason and an expiry`,
        covers: { queue: name, setting },
      });
  }
  const factor = standard.dlqRetentionFactor;
  if (factor !== undefined && q.dlq_retention_hours < factor * q.retention_hours)
    out.push({
      path: `${at}.dlq_retention_hours`,
      rule: `a ${q.tier} queue keeps its dead letters at least ${factor} × retention_hours (${factor * q.retention_hours})`,
      fix: `raise dlq_retention_hours to ${factor * q.retention_hours}, or add an exception`,
      covers: { queue: name, setting: 'dlq_retention_hours' },
    });
  return out;
}
