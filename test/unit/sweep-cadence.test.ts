import { describe, expect, it } from 'vitest';
import { nextPassIn } from '../../functions/core/sweep-cadence.js';

describe('nextPassIn', () => {
  it('starts the next pass an interval after the last one started, not after it ended', () => {
    expect(nextPassIn(1000, 0)).toBe(1000);
    expect(nextPassIn(1000, 300)).toBe(700);
  });

  it('leaves a quarter interval after a pass that took longer than one', () => {
    expect(nextPassIn(1000, 900)).toBe(250);
    expect(nextPassIn(1000, 5000)).toBe(250);
    // Tests run passes back to back.
    expect(nextPassIn(0, 40)).toBe(0);
  });
});
