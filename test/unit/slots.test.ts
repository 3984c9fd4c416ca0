import { describe, expect, it } from 'vitest';
import { SlotShare } from '../../client/slots.js';

function share(concurrency: number, queues: Record<string, { weight?: number; min?: number; max?: number }>) {
  const slots = new SlotShare(concurrency);
  for (const [name, options] of Object.entries(queues)) slots.add(name, options);
  return slots;
}

describe('SlotShare', () => {
  it('divides the slots by weight among the queues with work, rounding so they add up', () => {
    const slots = share(12, { heavy: { weight: 5 }, light: { weight: 1 } });
    expect([slots.share('heavy'), slots.share('light')]).toEqual([10, 2]);
    const three = share(10, { a: {}, b: {}, c: {} });
    expect(['a', 'b', 'c'].map((q) => three.share(q)).reduce((x, y) => x + y)).toBe(10);
  });

  it("lets a queue start only what the others' unused shares leave", () => {
    const slots = share(12, { heavy: { weight: 5 }, light: { weight: 1 } });
    expect(slots.room('light')).toBe(2);
    slots.started('light');
    slots.started('light');
    expect(slots.room('light')).toBe(0);
    // Free slots are owed to the heavy queue while it has work, however few it runs.
    expect(slots.room('heavy')).toBe(10);
  });

  it('gives an empty queue no share, and lends its slots until it has work again', () => {
    const slots = share(12, { heavy: { weight: 5 }, light: { weight: 1 } });
    slots.received('heavy', 0);
    expect([slots.share('heavy'), slots.share('light')]).toEqual([0, 12]);
    for (let i = 0; i < 12; i++) slots.started('light');
    slots.received('heavy', 1);
    expect(slots.room('heavy')).toBe(0);
    // A light handler ends: its slot is owed to the heavy queue, not taken again.
    slots.finished('light');
    expect([slots.room('heavy'), slots.room('light')]).toEqual([1, 0]);
  });

  it('keeps mins off the top and caps at max', () => {
    const slots = share(12, { floor: { weight: 1, min: 3 }, wide: { weight: 8 } });
    expect([slots.share('floor'), slots.share('wide')]).toEqual([4, 8]);
    const capped = share(8, { capped: { max: 2 } });
    expect(capped.room('capped')).toBe(2);
    expect(() => share(4, { a: { min: 3 }, b: { min: 2 } })).toThrow(/add up to 5/);
    expect(() => share(4, { a: { weight: 0 } })).toThrow(/above 0/);
  });
});
