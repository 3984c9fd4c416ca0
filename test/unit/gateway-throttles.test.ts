import { describe, expect, it } from 'vitest';
import { parseTenantConfig } from '../../functions/core/config.js';
import {
  ACCOUNT_RATE,
  gatewayThrottles,
  routeKeyOf,
  UNDECLARED,
} from '../../functions/core/gateway-throttles.js';

const tenant = (queues: Record<string, unknown>) => parseTenantConfig({ tenant: 't', queues });

describe('gatewayThrottles', () => {
  it("gives each queue's produce route and other routes twice their declared request quota", () => {
    const t = gatewayThrottles(
      tenant({
        a: { rate_limits: { produce: { requests_per_sec: 2.5 }, consume: { bytes_per_sec: 1000 } } },
      }),
    );
    expect(t.routes).toEqual([
      { routeKey: 'POST /queues/a/messages', queue: 'a', rate: 5, burst: 5 },
      // A byte quota says nothing of requests: the route gets the undeclared throttle.
      { routeKey: 'ANY /queues/a/{proxy+}', queue: 'a', ...UNDECLARED },
    ]);
    expect(t.others).toEqual(UNDECLARED);
    expect(t.totalRate).toBe(5 + 500 + 3 * 500);
    expect(t.findings).toEqual([]);
  });

  it("names the account's throttle and the routes an API may have when the queues pass them", () => {
    const many = Object.fromEntries(Array.from({ length: 149 }, (_, i) => [`q${i}`, {}]));
    const t = gatewayThrottles(tenant(many));
    expect(t.totalRate).toBeGreaterThan(ACCOUNT_RATE);
    expect(t.findings).toEqual([
      expect.stringContaining('"Throttle rate"'),
      expect.stringContaining('301 routes pass'),
    ]);
  });
});

describe('routeKeyOf', () => {
  const queues = new Set(['jobs']);
  it('picks the most specific route, as API Gateway does', () => {
    expect(routeKeyOf('POST', '/queues/jobs/messages', queues)).toBe('POST /queues/jobs/messages');
    expect(routeKeyOf('GET', '/queues/jobs/messages', queues)).toBe('ANY /queues/jobs/{proxy+}');
    expect(routeKeyOf('POST', '/queues/jobs/receive', queues)).toBe('ANY /queues/jobs/{proxy+}');
    expect(routeKeyOf('POST', '/queues/jobs/dlq/x/y', queues)).toBe('ANY /queues/jobs/{proxy+}');
    // A queue the stack has no route for, and routes of no queue, are the shared routes'.
    expect(routeKeyOf('POST', '/queues/other/messages', queues)).toBeUndefined();
    expect(routeKeyOf('GET', '/queues', queues)).toBeUndefined();
    expect(routeKeyOf('GET', '/queues/jobs', queues)).toBeUndefined();
  });
});
