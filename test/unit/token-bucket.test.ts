import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TokenBucket } from '../../functions/core/token-bucket.js';

describe('token bucket', () => {
  it('lets the burst through at once, then the rate', () => {
    const b = new TokenBucket(10, 5, 0);
    for (let i = 0; i < 5; i++) expect(b.take(1, 0).ok).toBe(true);
    expect(b.take(1, 0)).toEqual({ ok: false, retryAfterSeconds: 1 });
    expect(b.take(1, 100).ok).toBe(true);
    expect(b.take(1, 100).ok).toBe(false);
  });

  it('says how long to wait, in whole seconds', () => {
    const b = new TokenBucket(2, 10, 0);
    expect(b.take(10, 0).ok).toBe(true);
    expect(b.take(6, 0)).toEqual({ ok: false, retryAfterSeconds: 3 });
  });

  it('reserves ahead: each caller that waits what reserve says acts at the rate after the burst', () => {
    const b = new TokenBucket(3, 1.5, 0);
    expect(b.reserve(1, 0)).toBe(0);
    expect(b.reserve(1, 0)).toBeCloseTo(500 / 3);
    expect(b.reserve(1, 0)).toBeCloseTo(500);
    // Waited out and idle: the bucket refills, to its burst at most.
    expect(b.reserve(1, 2000)).toBe(0);
    expect(b.reserve(1, 2000)).toBeCloseTo(500 / 3);
  });

  it('never admits more than burst + rate × elapsed over any run of calls', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 1, max: 100 }),
        fc.array(fc.record({ dt: fc.integer({ min: 0, max: 500 }), n: fc.integer({ min: 1, max: 20 }) }), {
          maxLength: 60,
        }),
        (rate, burst, calls) => {
          const b = new TokenBucket(rate, burst, 0);
          let now = 0;
          let taken = 0;
          for (const c of calls) {
            now += c.dt;
            if (b.take(c.n, now).ok) taken += c.n;
            expect(taken).toBeLessThanOrEqual(burst + (rate * now) / 1000 + 1e-9);
          }
        },
      ),
    );
  });

  it('counts what other instances used', () => {
    const b = new TokenBucket(10, 10, 0);
    b.drain(15, 0);
    expect(b.take(1, 0).ok).toBe(false);
    expect(b.take(1, 600).ok).toBe(true);
  });
});
