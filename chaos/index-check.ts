import { createClients } from '../functions/aws/clients.js';
import { tableName } from '../functions/core/config.js';
import { type DynamoDbEmulator, startEmulators } from '../infra/local/emulators.js';
import { indexDisagreements } from '../infra/local/index-repair.js';
import type { Invariant } from './checks.js';

/**
 * After a crash run, with the runtime stopped: does the local DynamoDB's index still agree
 * with its table? leaseq finds work only through the index (ready, leased, delayed, dead
 * partitions), so an item the index lost is never delivered, swept or listed again. dynalite
 * writes an item's index entries and the item itself as separate LevelDB writes, so a SIGKILL
 * between them can leave them apart; this names each such item, which tells a lost message
 * caused by the emulator from one lost by leaseq's own logic. DynamoDB Local writes both in one
 * SQLite transaction, so there it must always agree.
 */

export async function checkIndex(
  dataDir: string,
  tenant: string,
  dynamodb: DynamoDbEmulator,
): Promise<Invariant> {
  const emulators = await startEmulators({ dataDir, shardLimit: 10, dynamodb });
  const clients = createClients({ region: 'us-east-1', endpoints: emulators.endpoints });
  try {
    const { stale, missing } = await indexDisagreements(clients, tableName(tenant));
    const violations = [
      ...stale.map(
        ({ entry, row }) =>
          `${entry.pk} ${entry.sk}: the index has it in ${entry.gsi1pk} (${entry.state}), the table in ${row?.gsi1pk ?? 'none'} (${row?.state ?? 'no item'})`,
      ),
      ...missing.map(
        (row) => `${row.pk} ${row.sk}: in the table as ${row.state} in ${row.gsi1pk}, missing from the index`,
      ),
    ];
    return {
      name: 'the local DynamoDB index agrees with its table',
      ok: violations.length === 0,
      violations,
    };
  } finally {
    clients.destroy();
    await emulators.close();
  }
}
