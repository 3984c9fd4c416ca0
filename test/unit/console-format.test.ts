import { describe, expect, it } from 'vitest';
import { time } from '../../console/format.js';

describe("the console's times", () => {
  it('read as the API and the command line print them: UTC ISO 8601, whatever the time zone', () => {
    expect(time('2026-12-04T18:10:00.123Z')).toBe('2026-12-04T18:10:00.123Z');
    expect(time('2026-12-04T19:10:00.123+01:00')).toBe('2026-12-04T18:10:00.123Z');
    expect(time(new Date(Date.UTC(2026, 11, 4, 18, 10)))).toBe('2026-12-04T18:10:00.000Z');
    expect(time(undefined)).toBe('—');
    expect(time('not a time')).toBe('not a time');
  });
});
