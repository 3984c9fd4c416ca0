import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { AwsClients } from '../../functions/aws/clients.js';
import { GSI1 } from '../../functions/store/keys.js';

/**
 * dynalite writes an item and its index entries as separate LevelDB writes, so a process
 * killed between them leaves an item the index does not show — and leaseq finds work only
 * through the index. AWS's own indexes always catch up; locally, each start puts back what a
 * crash left out: every item with index keys that the index lacks is written again as it is
 * (dynalite re-creates an item's index entries on every put).
 */
export async function repairIndex(clients: AwsClients, table: string): Promise<number> {
  const scan = async (index?: string) => {
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await clients.doc.send(
        new ScanCommand({
          TableName: table,
          ...(index ? { IndexName: index } : { FilterExpression: 'attribute_exists(gsi1pk)' }),
          ExclusiveStartKey: start,
        }),
      );
      items.push(...((page.Items ?? []) as Record<string, unknown>[]));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  };
  const placed = new Set(
    (await scan(GSI1)).map((i) => `${i.pk}\u0000${i.sk}\u0000${i.gsi1pk}\u0000${i.gsi1sk}`),
  );
  const missing = (await scan()).filter(
    (i) => !placed.has(`${i.pk}\u0000${i.sk}\u0000${i.gsi1pk}\u0000${i.gsi1sk}`),
  );
  for (const item of missing) await clients.doc.send(new PutCommand({ TableName: table, Item: item }));
  return missing.length;
}
