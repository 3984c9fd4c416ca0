import { describe, expect, it } from 'vitest';
import { perObject } from '../../functions/core/per-object.js';

describe('perObject', () => {
  it('makes a value once per object, falsy values too, and apart for each object', () => {
    let made = 0;
    const of = perObject((o: { n: number }) => {
      made++;
      return o.n;
    });
    const zero = { n: 0 };
    const one = { n: 1 };
    expect([of(zero), of(zero), of(one), of(one)]).toEqual([0, 0, 1, 1]);
    expect(made).toBe(2);
  });
});
