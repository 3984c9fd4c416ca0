import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The tenant every chaos run uses. Short leases and one short backoff tier, so a message
 * caught by a kill or a fault comes back within seconds, and a run sees many redeliveries.
 */

export const QUEUES = { unordered: 'work', ordered: 'ordered', pushed: 'pushed' } as const;

/** The ordered queue consumed by a Lambda consumer (push-consumer.ts) instead of pull workers. */
export const CHAOS_PUSH = { queue: QUEUES.pushed, consumer: 'chaos' } as const;

const TIMINGS = { lease_seconds: 2, backoff_seconds: [1], max_attempts: 5 };

export const CHAOS_TENANT = {
  tenant: 'chaos',
  // The two pull queues share the tenant's stream (docs/streams.md); the push queue has its own.
  streams: { shared: { shards: 2 } },
  queues: {
    // Produce admits every request's records: kills and faults land between append and that
    // admission, and produce races dispatch for the same shards and keys.
    [QUEUES.unordered]: { ...TIMINGS, fast_admission: 'always' },
    // Up to ten of a key a receive (a hot key in producers.ts has a backlog for it).
    [QUEUES.ordered]: { ...TIMINGS, ordered: true, fast_admission: 'always', max_per_key: 10 },
    [QUEUES.pushed]: {
      ...TIMINGS,
      shards: 2,
      ordered: true,
      // Small batches, so a kill finds batches half done.
      consumers: [{ name: CHAOS_PUSH.consumer, entry: 'chaos/push-consumer.ts', batch_size: 20 }],
    },
  },
};

/** Fixed, so the key survives restarts of a child runtime (it is only ever local). */
export const CHAOS_ADMIN_KEY = 'chaos-admin-key-0123456789';

/** The chaos tenant with every stream (the shared one and the push queue's own) at `shards`. */
export function chaosTenant(shards: number): typeof CHAOS_TENANT {
  const pushed = CHAOS_TENANT.queues[QUEUES.pushed];
  return {
    ...CHAOS_TENANT,
    streams: { shared: { shards } },
    queues: { ...CHAOS_TENANT.queues, [QUEUES.pushed]: { ...pushed, shards } },
  };
}

/**
 * Writes the tenant file into `dir` for `--config` (again, with other shard counts, to reshard
 * as a user does: change the file, then start); answers its path.
 */
export function writeTenantFile(dir: string, tenant: object = CHAOS_TENANT): string {
  const path = join(dir, 'tenant.json');
  writeFileSync(path, `${JSON.stringify(tenant, null, 2)}\n`);
  return path;
}
