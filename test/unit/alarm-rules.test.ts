import { describe, expect, it } from 'vitest';
import { queueConfigSchema } from '../../functions/core/config.js';
import { alarmName, backlogAgeLimitSeconds } from '../../functions/observability/alarm-rules.js';

describe('alarm rules', () => {
  it('puts the backlog age limit at half the retention', () => {
    expect(backlogAgeLimitSeconds(queueConfigSchema.parse({}))).toBe(12 * 3600); // the default 24 h
    // The shortest retention allowed still leaves 12 h between the alarm and the first lost record.
    expect(backlogAgeLimitSeconds({ retention_hours: 24 })).toBe(12 * 3600);
    expect(backlogAgeLimitSeconds({ retention_hours: 168 })).toBe(84 * 3600);
  });

  it('names an alarm by tenant and queue, never one name for two of them', () => {
    expect(alarmName('acme', 'orders', 'dlq-oldest-age')).toBe('leaseq-acme/orders/dlq-oldest-age');
    // Hyphens are allowed in both names: joined with one they would collide.
    expect(alarmName('a', 'b-c', 'iterator-age')).not.toBe(alarmName('a-b', 'c', 'iterator-age'));
  });
});
