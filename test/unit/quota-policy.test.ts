import { describe, expect, it } from 'vitest';
import { demandsFor } from '../../functions/access/limits.js';
import { parseTenantConfig, storageQuotaBytes } from '../../functions/core/config.js';

const queue = (raw: object) =>
  parseTenantConfig({ tenant: 't', queues: { q: raw } }).queues.q as NonNullable<
    ReturnType<typeof parseTenantConfig>['queues'][string]
  >;

describe('storage quota', () => {
  it('is the queue setting when given', () => {
    expect(storageQuotaBytes(queue({ storage_quota_bytes: 5000 }))).toBe(5000);
  });

  it('is derived from the produce byte rate × retention × 1.5, or the shards’ write capacity', () => {
    expect(
      storageQuotaBytes(queue({ retention_hours: 24, rate_limits: { produce: { bytes_per_sec: 100 } } })),
    ).toBe(100 * 24 * 3600 * 1.5);
    expect(storageQuotaBytes(queue({ shards: 3, retention_hours: 24, dlq_retention_hours: 48 }))).toBe(
      3 * 1024 * 1024 * 24 * 3600 * 1.5,
    );
  });
});

describe('rate quota demands', () => {
  it('draws on the queue and the key, in requests and bytes, for the action only', () => {
    const config = queue({ rate_limits: { produce: { requests_per_sec: 10, bytes_per_sec: 1000 } } });
    const principal = {
      name: 'k',
      scopes: [],
      limits: { produce: { requests_per_sec: 2 }, consume: { bytes_per_sec: 5 } },
    };
    expect(demandsFor(principal, 'q', config, 'produce', 300)).toEqual([
      { dimension: 'queue:q:produce:requests', rate: 10, amount: 1 },
      { dimension: 'queue:q:produce:bytes', rate: 1000, amount: 300 },
      { dimension: 'key:k:produce:requests', rate: 2, amount: 1 },
    ]);
    expect(demandsFor(principal, 'q', config, 'consume', 40)).toEqual([
      { dimension: 'key:k:consume:bytes', rate: 5, amount: 40 },
    ]);
  });
});
