import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { createClients } from '../functions/aws/clients.js';
import { tableName } from '../functions/core/config.js';
import { GSI1 } from '../functions/store/keys.js';
import { startEmulators } from '../infra/local/emulators.js';
import type { Invariant } from './checks.js';

/**
 * After a crash run, with the runtime stopped: does the local DynamoDB's index still agree
 * with its table? leaseq finds work only through the index (ready, leased, delayed, dead
 * partitions), so an item the index lost is never delivered, swept or listed again. dynalite
 * writes an item's index entries and the item itself as separate LevelDB writes, so a SIGKILL
 * between them can leave them apart; this names each such item, which tells a lost message
 * caused by the emulator from one lost by leaseq's own logic.
 */

type Item = Record<string, unknown>;

export async function checkIndex(dataDir: string, tenant: string): Promise<Invariant> {
  const emulators = await startEmulators({ dataDir, shardLimit: 10 });
  const clients = createClients({ region: 'us-east-1', endpoints: emulators.endpoints });
  try {
    const scan = async (index?: string) => {
      const items: Item[] = [];
      let start: Item | undefined;
      do {
        const page = await clients.doc.send(
          new ScanCommand({
            TableName: tableName(tenant),
            ...(index ? { IndexName: index } : {}),
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        );
        items.push(...((page.Items ?? []) as Item[]));
        start = page.LastEvaluatedKey as Item | undefined;
      } while (start);
      return items;
    };
    const id = (i: Item) => `${i.pk} ${i.sk}`;
    const place = (i: Item) => `${i.gsi1pk} ${i.gsi1sk}`;
    const table = new Map((await scan()).map((i) => [id(i), i]));
    const violations: string[] = [];
    const indexed = new Set<string>();
    for (const entry of await scan(GSI1)) {
      const item = table.get(id(entry));
      indexed.add(`${id(entry)} ${place(entry)}`);
      if (item?.gsi1pk === undefined || place(item) !== place(entry))
        violations.push(
          `${id(entry)}: the index has it in ${entry.gsi1pk} (${entry.state}), the table in ${item?.gsi1pk ?? 'none'} (${item?.state ?? 'no item'})`,
        );
    }
    for (const item of table.values()) {
      if (item.gsi1pk !== undefined && !indexed.has(`${id(item)} ${place(item)}`))
        violations.push(
          `${id(item)}: in the table as ${item.state} in ${item.gsi1pk}, missing from the index`,
        );
    }
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
