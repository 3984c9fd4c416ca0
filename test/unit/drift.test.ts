import { describe, expect, it } from 'vitest';
import { parseTenantConfig } from '../../functions/core/config.js';
import { streamDrift, tableDrift } from '../../functions/core/drift.js';

const tenant = (tier: string) => parseTenantConfig({ tenant: 'a', queues: { q: { tier, owner: 't' } } });

describe('drift', () => {
  it("finds a stream's retention lowered below the tenant file's, and nothing at or above it", () => {
    const config = { retention_hours: 72 };
    expect(streamDrift('s', config, { retentionHours: 24 })).toEqual([
      { resource: 'stream s', setting: 'retention_hours', expected: '72 h', observed: '24 h' },
    ]);
    expect(streamDrift('s', config, { retentionHours: 72 })).toEqual([]);
    expect(streamDrift('s', config, { retentionHours: 168 })).toEqual([]);
    // Not said is not drift.
    expect(streamDrift('s', config, {})).toEqual([]);
  });

  it("finds the table's point-in-time recovery off, and its deletion protection off when a queue is critical", () => {
    expect(
      tableDrift('t', tenant('standard'), { pointInTimeRecovery: false, deletionProtection: false }),
    ).toEqual([{ resource: 'table t', setting: 'point-in-time recovery', expected: 'on', observed: 'off' }]);
    expect(
      tableDrift('t', tenant('critical'), { pointInTimeRecovery: true, deletionProtection: false }),
    ).toEqual([{ resource: 'table t', setting: 'deletion protection', expected: 'on', observed: 'off' }]);
    expect(
      tableDrift('t', tenant('critical'), { pointInTimeRecovery: true, deletionProtection: true }),
    ).toEqual([]);
    expect(tableDrift('t', tenant('critical'), {})).toEqual([]);
  });
});
