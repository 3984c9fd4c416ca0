import type { AwsClients } from '../../functions/aws/clients.js';
import { DeleteCommand, PutCommand, ScanCommand } from '../../functions/aws/dynamodb.js';
import { GSI1 } from '../../functions/store/keys.js';

/**
 * dynalite writes an item and its index entries as separate LevelDB writes, so a process
 * killed between them leaves the index out of step with the table: an item it does not show,
 * or an entry for what the item no longer is. leaseq finds work only through the index, and
 * AWS's own indexes always catch up; locally, each start mends what a crash left:
 * - an item the index lacks is written again as it is (dynalite re-creates its entries);
 * - a stale entry is removed by writing the item as the entry says, then as it really is (or
 *   deleting it, when the table no longer has it): dynalite drops an entry whose keys change.
 */

export type Item = Record<string, unknown>;

const id = (i: Item) => `${i.pk}\u0000${i.sk}`;
const place = (i: Item) => `${i.gsi1pk}\u0000${i.gsi1sk}`;

export interface IndexDisagreements {
  /** Index entries the table does not back: [the entry, the item as it is (if any)]. */
  stale: { entry: Item; row: Item | undefined }[];
  /** Items with index keys the index does not show. */
  missing: Item[];
}

/** Where the index and the table disagree: one scan of each. */
export async function indexDisagreements(clients: AwsClients, table: string): Promise<IndexDisagreements> {
  const scan = async (index?: string) => {
    const items: Item[] = [];
    let start: Item | undefined;
    do {
      const page = await clients.doc.send(
        new ScanCommand({
          TableName: table,
          ...(index ? { IndexName: index } : {}),
          ExclusiveStartKey: start,
        }),
      );
      items.push(...((page.Items ?? []) as Item[]));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  };
  const [rows, entries] = await Promise.all([scan(), scan(GSI1)]);
  const byId = new Map(rows.map((r) => [id(r), r]));
  const indexed = new Set(entries.map((e) => `${id(e)}\u0000${place(e)}`));
  return {
    stale: entries.flatMap((entry) => {
      const row = byId.get(id(entry));
      return row && row.gsi1pk !== undefined && place(row) === place(entry) ? [] : [{ entry, row }];
    }),
    missing: rows.filter((row) => row.gsi1pk !== undefined && !indexed.has(`${id(row)}\u0000${place(row)}`)),
  };
}

export async function repairIndex(clients: AwsClients, table: string): Promise<number> {
  const { stale, missing } = await indexDisagreements(clients, table);
  const put = (Item: Item) => clients.doc.send(new PutCommand({ TableName: table, Item }));
  for (const { entry, row } of stale) {
    await put(entry);
    if (row) await put(row);
    else await clients.doc.send(new DeleteCommand({ TableName: table, Key: { pk: entry.pk, sk: entry.sk } }));
  }
  for (const row of missing) await put(row);
  return stale.length + missing.length;
}
