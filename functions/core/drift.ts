import type { QueueConfig, TenantConfig } from './config.js';

/**
 * Drift: a durability setting the stack promises, found lowered where it runs (docs/tiers.md,
 * "Drift"). The stack sets each stream's retention from the tenant file, point-in-time recovery
 * on the table, and deletion protection when a queue is critical; a migration or a hand in the
 * console can lower any of them, and nothing else would tell. What the service does not say
 * (an emulator without the call) is not drift.
 */

export interface ObservedStream {
  retentionHours?: number;
}

export interface ObservedTable {
  pointInTimeRecovery?: boolean;
  deletionProtection?: boolean;
}

export interface DriftFinding {
  /** `stream <name>` or `table <name>`. */
  resource: string;
  setting: string;
  expected: string;
  observed: string;
}

export function streamDrift(
  stream: string,
  config: Pick<QueueConfig, 'retention_hours'>,
  observed: ObservedStream,
): DriftFinding[] {
  const hours = observed.retentionHours;
  return hours !== undefined && hours < config.retention_hours
    ? [
        {
          resource: `stream ${stream}`,
          setting: 'retention_hours',
          expected: `${config.retention_hours} h`,
          observed: `${hours} h`,
        },
      ]
    : [];
}

/**
 * Shards whose ranges a queue admitted from another stream than the tenant file puts it on (its
 * `shards` dropped, or a `stream` named): admission refuses its records there until it moves back.
 */
export function streamMoveDrift(
  stream: string,
  marks: readonly { shard: string; stream: string }[],
): DriftFinding[] {
  return marks
    .filter((m) => m.stream !== stream)
    .map((m) => ({
      resource: `ranges of shard ${m.shard}`,
      setting: 'stream',
      expected: stream,
      observed: m.stream,
    }));
}

export function tableDrift(
  table: string,
  tenant: Pick<TenantConfig, 'queues'>,
  observed: ObservedTable,
): DriftFinding[] {
  const out: DriftFinding[] = [];
  if (observed.pointInTimeRecovery === false)
    out.push({
      resource: `table ${table}`,
      setting: 'point-in-time recovery',
      expected: 'on',
      observed: 'off',
    });
  const critical = Object.values(tenant.queues).some((q) => q.tier === 'critical');
  if (critical && observed.deletionProtection === false)
    out.push({ resource: `table ${table}`, setting: 'deletion protection', expected: 'on', observed: 'off' });
  return out;
}
