import { describe, expect, it } from 'vitest';
import { ConfigError, parseTenantConfig } from '../../functions/core/config.js';
import { parseExceptions } from '../../functions/core/tier-exceptions.js';
import { findingLine, tierFindings } from '../../functions/core/tiers.js';

const NOW = Date.parse('2026-12-06T12:00:00Z');
const PAGE = { page: ['oncall@example.com'] };

function findings({ exceptions, ...raw }: Record<string, unknown>) {
  const tenant = parseTenantConfig({ tenant: 'a', alarms: PAGE, ...raw });
  return tierFindings(tenant, parseExceptions(exceptions, tenant, 'file'), NOW).map(findingLine);
}

describe('tiers', () => {
  it('fills retention by tier: critical keeps three days, ephemeral the least', () => {
    const { queues } = parseTenantConfig({
      tenant: 'a',
      queues: {
        // Streams of their own: on a shared stream they would keep its longest retention.
        e: { tier: 'ephemeral', shards: 1 },
        s: { shards: 1 },
        c: { tier: 'critical', shards: 1 },
        own: { tier: 'critical', retention_hours: 96, shards: 1 },
      },
    });
    expect(
      [queues.e, queues.s, queues.c, queues.own].map((q) => [q?.retention_hours, q?.dlq_retention_hours]),
    ).toEqual([
      [24, 48],
      [24, 336],
      [72, 336],
      [96, 336],
    ]);
    const shared = parseTenantConfig({
      tenant: 'a',
      queues: { e: { tier: 'ephemeral' }, c: { tier: 'critical' } },
    });
    expect([shared.queues.e?.retention_hours, shared.queues.c?.retention_hours]).toEqual([72, 72]);
  });

  it('passes owned queues at their standard, and ephemeral ones with nothing', () => {
    expect(
      findings({
        queues: {
          jobs: { owner: 'jobs-team' },
          ledger: { tier: 'critical', owner: 'ledger' },
          cache: { tier: 'ephemeral' },
        },
      }),
    ).toEqual([]);
  });

  it('refuses a standard or critical queue without an owner, one line each with the fix', () => {
    expect(findings({ queues: { jobs: {}, ledger: { tier: 'critical' } } })).toEqual([
      'queues.jobs.owner: a standard queue names the team that owns it and its dead letters (fix: add "owner": "<team>", or "tier": "ephemeral" if losing its messages is acceptable)',
      'queues.ledger.owner: a critical queue names the team that owns it and its dead letters (fix: add "owner": "<team>", or "tier": "ephemeral" if losing its messages is acceptable)',
    ]);
  });

  it('refuses an owned queue nobody is paged for', () => {
    const lines = tierFindings(
      parseTenantConfig({ tenant: 'a', queues: { jobs: { owner: 't' }, cache: { tier: 'ephemeral' } } }),
      [],
      NOW,
    ).map(findingLine);
    expect(lines).toEqual([
      'alarms.page: a standard queue (jobs) pages someone when its dead letters wait (fix: add an on-call address to alarms.page)',
    ]);
  });

  it('refuses a DLQ retention under twice the log, on standard and critical queues only', () => {
    expect(
      findings({
        queues: {
          jobs: { owner: 't', retention_hours: 120, dlq_retention_hours: 200 },
          cache: { tier: 'ephemeral', retention_hours: 120, dlq_retention_hours: 200 },
        },
      }),
    ).toEqual([
      'queues.jobs.dlq_retention_hours: a standard queue keeps its dead letters at least 2 × retention_hours (240) (fix: raise dlq_retention_hours to 240, or add an exception)',
    ]);
  });

  it("refuses a setting under its tier's standard", () => {
    expect(findings({ queues: { ledger: { tier: 'critical', owner: 't', retention_hours: 24 } } })).toEqual([
      'queues.ledger.retention_hours: a critical queue keeps retention_hours at 72 or more (it is 24) (fix: raise it to 72, or add an exception with an owner, a reason and an expiry)',
    ]);
    expect(findings({ queues: { jobs: { owner: 't', dlq_retention_hours: 72 } } })).toEqual([
      'queues.jobs.dlq_retention_hours: a standard queue keeps dlq_retention_hours at 168 or more (it is 72) (fix: raise it to 168, or add an exception with an owner, a reason and an expiry)',
    ]);
  });

  it('allows a lowered setting under an exception until the day it expires, and refuses the exception from then on', () => {
    const file = (expires: string) => ({
      queues: { ledger: { tier: 'critical', owner: 't', retention_hours: 24 } },
      exceptions: [
        { queue: 'ledger', setting: 'retention_hours', owner: 'data-eng', reason: 'migration', expires },
      ],
    });
    expect(findings(file('2026-12-07'))).toEqual([]);
    const expired = findings(file('2026-12-06'));
    expect(expired).toContain(
      'exceptions[0]: the exception for queues.ledger.retention_hours (data-eng) expired on 2026-12-06 (fix: restore the setting to its tier\'s standard, or renew the exception with a new "expires")',
    );
    // Expired, it covers nothing: the setting is refused again.
    expect(expired.some((l) => l.startsWith('queues.ledger.retention_hours:'))).toBe(true);
  });

  it('covers only the queue and setting an exception names', () => {
    const lines = findings({
      queues: { jobs: {}, other: {} },
      exceptions: [
        { queue: 'jobs', setting: 'owner', owner: 'platform', reason: 'team forming', expires: '2027-01-31' },
      ],
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^queues\.other\.owner:/);
  });

  it.each([
    [
      [{ queue: 'other', setting: 'owner', owner: 't', reason: 'r', expires: '2027-01-01' }],
      'exceptions[0].queue',
    ],
    [
      [{ queue: 'jobs', setting: 'owner', owner: 't', reason: 'r', expires: '2027-13-45' }],
      'exceptions[0].expires',
    ],
    [
      [{ queue: 'jobs', setting: 'shards', owner: 't', reason: 'r', expires: '2027-01-01' }],
      'exceptions[0].setting',
    ],
    [[{ queue: 'jobs', setting: 'owner', owner: 't', expires: '2027-01-01' }], 'exceptions[0].reason'],
    [{ queue: 'jobs' }, 'exceptions'],
  ])('refuses a malformed exception with its path (%#)', (raw, path) => {
    const tenant = parseTenantConfig({ tenant: 'a', queues: { jobs: {} } });
    let error: unknown;
    try {
      parseExceptions(raw, tenant, 'file');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues.map((i) => i.path)).toContain(path);
  });
});
