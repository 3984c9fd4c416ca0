import type { AwsClients } from '../../functions/aws/clients.js';
import { DeleteCommand, GetCommand, PutCommand, ScanCommand } from '../../functions/aws/dynamodb.js';
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

/**
 * Where the index and the table disagree: one scan of each. The table's scan answers only the keys
 * of the items with index keys: a table that grew with segments and dedup records would otherwise
 * make every start slower (the whole table, payloads included, read at each one).
 */
export async function indexDisagreements(clients: AwsClients, table: string): Promise<IndexDisagreements> {
  const scan = async (input: { IndexName?: string; keysOnly?: boolean }) => {
    const items: Item[] = [];
    let start: Item | undefined;
    do {
      const page = await clients.doc.send(
        new ScanCommand({
          TableName: table,
          ...(input.IndexName ? { IndexName: input.IndexName } : {}),
          ...(input.keysOnly
            ? {
                ProjectionExpression: '#pk, #sk, #ipk, #isk',
                FilterExpression: 'attribute_exists(#ipk)',
                ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk', '#ipk': 'gsi1pk', '#isk': 'gsi1sk' },
              }
            : {}),
          ExclusiveStartKey: start,
        }),
      );
      items.push(...((page.Items ?? []) as Item[]));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  };
  const [keys, entries] = await Promise.all([scan({ keysOnly: true }), scan({ IndexName: GSI1 })]);
  // Whole items only where one is needed: one the index lacks, or one a stale entry names.
  const whole = async (key: Item) =>
    (
      await clients.doc.send(
        new GetCommand({ TableName: table, Key: { pk: key.pk, sk: key.sk }, ConsistentRead: true }),
      )
    ).Item as Item | undefined;
  const indexed = new Set(entries.map((e) => `${id(e)}\u0000${place(e)}`));
  const missingKeys = keys.filter((row) => !indexed.has(`${id(row)}\u0000${place(row)}`));
  const byId = new Map(keys.map((r) => [id(r), r]));
  const staleEntries = entries.filter((entry) => {
    const row = byId.get(id(entry));
    return !(row && place(row) === place(entry));
  });
  const missing = (await Promise.all(missingKeys.map(whole))).filter((row): row is Item => row !== undefined);
  const stale = await Promise.all(staleEntries.map(async (entry) => ({ entry, row: await whole(entry) })));
  return { stale, missing };
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
