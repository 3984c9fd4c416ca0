import { describe, expect, it } from 'vitest';
import { GROUP_ERROR_CHARS, groupByError } from '../../functions/core/dead-letter-groups.js';

describe('dead letters grouped by their last error', () => {
  it('counts each error, keeps its first and last death and a sample, largest group first', () => {
    const groups = groupByError([
      { message_id: 'a', dead_at: 30, error: 'db timeout', reason: 'nack' },
      { message_id: 'b', dead_at: 10, error: ' parse error ', reason: 'non_retryable' },
      { message_id: 'c', dead_at: 20, error: 'db timeout', reason: 'nack' },
      { message_id: 'd', dead_at: 5, error: 'db timeout', reason: 'nack' },
      { message_id: 'e', dead_at: 40, reason: 'lease_expired' },
      { message_id: 'f', dead_at: 50, error: '', reason: 'lease_expired' },
    ]);
    expect(groups).toEqual([
      { error: 'db timeout', count: 3, first_dead_at: 5, last_dead_at: 30, sample_message_id: 'a' },
      { error: '(lease_expired)', count: 2, first_dead_at: 40, last_dead_at: 50, sample_message_id: 'e' },
      { error: 'parse error', count: 1, first_dead_at: 10, last_dead_at: 10, sample_message_id: 'b' },
    ]);
  });

  it('groups long errors by their start', () => {
    const start = 'x'.repeat(GROUP_ERROR_CHARS);
    const groups = groupByError([
      { message_id: 'a', dead_at: 1, error: `${start} request 1`, reason: 'nack' },
      { message_id: 'b', dead_at: 2, error: `${start} request 2`, reason: 'nack' },
    ]);
    expect(groups.map((g) => [g.error, g.count])).toEqual([[start, 2]]);
  });
});
