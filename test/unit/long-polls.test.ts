import { describe, expect, it } from 'vitest';
import { parseTenantConfig } from '../../functions/core/config.js';
import {
  ACCOUNT_CONCURRENCY,
  placesPerEpoch,
  pollEpoch,
  waitingReceivesFindings,
} from '../../functions/core/long-polls.js';

const tenant = (queues: Record<string, object>) => parseTenantConfig({ tenant: 't', queues });

describe('places to wait', () => {
  it('gives each epoch half the places, so the two epochs a wait can span hold them all', () => {
    expect(placesPerEpoch({ max_waiting_receives: 100 })).toBe(50);
    expect(placesPerEpoch({ max_waiting_receives: 1 })).toBe(1);
    expect(pollEpoch(39_999)).toBe(1);
    expect(pollEpoch(40_000)).toBe(2);
  });

  it("names Lambda's account concurrency when the queues' places together pass it", () => {
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`q${i}`, {}]));
    expect(waitingReceivesFindings(tenant(ten))).toEqual([]);
    const eleven = { ...ten, q10: {} };
    expect(waitingReceivesFindings(tenant(eleven))).toEqual([
      expect.stringContaining(`let 1100 receives wait at once, past Lambda's ${ACCOUNT_CONCURRENCY}`),
    ]);
    // Within the account's concurrency again: 900 + 50 + 50.
    const lowered = { ...eleven, q0: { max_waiting_receives: 50 }, q10: { max_waiting_receives: 50 } };
    expect(waitingReceivesFindings(tenant(lowered))).toEqual([]);
  });
});
