import { describe, expect, it } from 'vitest';
import { passReads } from '../../functions/admission/fast-admission.js';
import { parseTenantConfig, SHARD_READS_PER_SECOND } from '../../functions/core/config.js';

describe("produce's passes' share of a shard's reads", () => {
  const { queues } = parseTenantConfig({
    tenant: 'acme',
    queues: { polled: { shards: 1 }, pushed: { shards: 1, fan_out: true } },
  });
  const reads = (name: string) => {
    const config = queues[name];
    if (!config) throw new Error(`no queue ${name}`);
    return passReads(config);
  };

  it("leaves dispatch's polls two of a shard's five reads, and one when dispatch is pushed (fan-out)", () => {
    expect(SHARD_READS_PER_SECOND).toBe(5);
    expect(reads('polled')).toEqual({ perSecond: 3, burst: 1.5 });
    expect(reads('pushed')).toEqual({ perSecond: 4, burst: 1.5 });
  });
});
