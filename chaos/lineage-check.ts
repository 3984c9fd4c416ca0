import { createClients } from '../functions/aws/clients.js';
import { streamOf, type TenantConfig, tableName } from '../functions/core/config.js';
import { compareSequence } from '../functions/core/ranges.js';
import { ShardDirectory } from '../functions/log/stream.js';
import { RangeStore } from '../functions/store/ranges.js';
import { type DynamoDbEmulator, startEmulators } from '../infra/local/emulators.js';
import type { Invariant } from './checks.js';

/**
 * After a run, with the runtime stopped: was any log entry admitted twice? Produce's fast path and
 * dispatch admit the same shards (admission/range-admission.ts), so each shard's ranges must
 * follow one another without overlap: an entry in two ranges would be two deliveries of one
 * message that no retry asked for.
 */
export async function checkLineage(
  dataDir: string,
  tenant: TenantConfig,
  queues: readonly string[],
  dynamodb: DynamoDbEmulator,
): Promise<Invariant> {
  const emulators = await startEmulators({ dataDir, shardLimit: 10, dynamodb });
  const clients = createClients({ region: 'us-east-1', endpoints: emulators.endpoints });
  const ranges = new RangeStore(clients.doc, tableName(tenant.tenant));
  const shards = new ShardDirectory(clients.kinesis);
  const violations: string[] = [];
  let counted = 0;
  try {
    for (const queue of queues) {
      for (const shard of await shards.shards(streamOf(tenant, queue))) {
        const list = await ranges.from(queue, shard, undefined, 100_000, true);
        counted += list.length;
        list.forEach((range, i) => {
          const before = list[i - 1];
          if (before && compareSequence(before.last, range.start) >= 0)
            violations.push(
              `${queue} ${shard}: range ${range.start} starts at or before ${before.last}, the end of the one before`,
            );
          if (before && range.base !== before.base + before.count)
            violations.push(
              `${queue} ${shard}: range ${range.start} counts from ${range.base}, not ${before.base + before.count}`,
            );
        });
      }
    }
    return {
      name: `no log entry admitted twice (${counted} ranges, each after the one before)`,
      ok: violations.length === 0 && counted > 0,
      violations: counted > 0 ? violations : ['no ranges found: nothing was checked'],
    };
  } finally {
    clients.destroy();
    await emulators.close();
  }
}
