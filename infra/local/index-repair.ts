import type { ScanCommandInput } from '@aws-sdk/lib-dynamodb';
import type { AwsClients } from '../../functions/aws/clients.js';
import { DeleteCommand, GetCommand, PutCommand, ScanCommand } from '../../functions/aws/dynamodb.js';
import { GSI1 } from '../../functions/store/keys.js';

/**
 * dynalite writes an item and its index entries as separate LevelDB writes, so a process
 * killed between them leaves the index out of step with the table: an item it does not show,
 * or an entry for what the item no longer is. leaseq finds work only through the index, and
 * AWS's own indexes always catch up; locally, each start mends what a crash left, among the
 * items of the writes dynalite had not answered (write-journal.mjs), or all of them when those
 * are not known:
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
 * Where the index and the table disagree. With `only` (the items a crash can have torn), one scan
 * of the index and a read of each of those items: a start's cost then follows what was in flight
 * at the crash, not the table's size. Without, one scan of each (the crash run's check): the
 * table's answers only the keys of the items with index keys, not their payloads.
 */
export async function indexDisagreements(
  clients: AwsClients,
  table: string,
  only?: readonly Item[],
): Promise<IndexDisagreements> {
  const [keys, entries] = await Promise.all([
    only ? readAll(clients, table, only) : scan(clients, { TableName: table, ...INDEXED_KEYS }),
    scan(clients, { TableName: table, IndexName: GSI1 }),
  ]);
  const suspect = only && new Set(only.map(id));
  const indexed = new Set(entries.map((e) => `${id(e)}\u0000${place(e)}`));
  const missingKeys = keys.filter(
    (row) => row.gsi1pk !== undefined && !indexed.has(`${id(row)}\u0000${place(row)}`),
  );
  const byId = new Map(keys.map((r) => [id(r), r]));
  const staleEntries = entries.filter((entry) => {
    if (suspect && !suspect.has(id(entry))) return false;
    const row = byId.get(id(entry));
    return !(row && place(row) === place(entry));
  });
  // Whole items only where one is needed: one the index lacks, or one a stale entry names.
  const whole = async (key: Item) =>
    (
      await clients.doc.send(
        new GetCommand({ TableName: table, Key: { pk: key.pk, sk: key.sk }, ConsistentRead: true }),
      )
    ).Item as Item | undefined;
  const missing = (await Promise.all(missingKeys.map(whole))).filter((row): row is Item => row !== undefined);
  const stale = await Promise.all(staleEntries.map(async (entry) => ({ entry, row: await whole(entry) })));
  return { stale, missing };
}

/** The keys of the items with index keys, and those keys. */
const INDEXED_KEYS = {
  ProjectionExpression: '#pk, #sk, #ipk, #isk',
  FilterExpression: 'attribute_exists(#ipk)',
  ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk', '#ipk': 'gsi1pk', '#isk': 'gsi1sk' },
};

async function scan(clients: AwsClients, input: ScanCommandInput): Promise<Item[]> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await clients.doc.send(new ScanCommand({ ...input, ExclusiveStartKey: start }));
    items.push(...((page.Items ?? []) as Item[]));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Those of `keys` the table has, each once, with the attributes the comparison needs. */
async function readAll(clients: AwsClients, table: string, keys: readonly Item[]): Promise<Item[]> {
  const unique = [...new Map(keys.map((k) => [id(k), { pk: k.pk, sk: k.sk }])).values()];
  const rows = await Promise.all(
    unique.map(
      async (Key) =>
        (
          await clients.doc.send(
            new GetCommand({
              TableName: table,
              Key,
              ConsistentRead: true,
              ProjectionExpression: INDEXED_KEYS.ProjectionExpression,
              ExpressionAttributeNames: INDEXED_KEYS.ExpressionAttributeNames,
            }),
          )
        ).Item as Item | undefined,
    ),
  );
  return rows.filter((row): row is Item => row !== undefined);
}

/** Mends what `indexDisagreements` finds (of `only`, when given); answers how many it mended. */
export async function repairIndex(
  clients: AwsClients,
  table: string,
  only?: readonly Item[],
): Promise<number> {
  const { stale, missing } = await indexDisagreements(clients, table, only);
  const put = (Item: Item) => clients.doc.send(new PutCommand({ TableName: table, Item }));
  for (const { entry, row } of stale) {
    await put(entry);
    if (row) await put(row);
    else await clients.doc.send(new DeleteCommand({ TableName: table, Key: { pk: entry.pk, sk: entry.sk } }));
  }
  for (const row of missing) await put(row);
  return stale.length + missing.length;
}
