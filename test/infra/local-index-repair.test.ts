import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createClients } from '../../functions/aws/clients.js';
import { PutCommand } from '../../functions/aws/dynamodb.js';
import { createAdminClients } from '../../infra/local/admin-clients.js';
import { startEmulators } from '../../infra/local/emulators.js';
import { indexDisagreements, repairIndex } from '../../infra/local/index-repair.js';
import { ensureTable } from '../../infra/local/resources.js';

/**
 * A start checks the items of the writes dynalite had not answered when the process died (its
 * journal), not the whole table. A kill between dynalite's two LevelDB writes is made here by
 * writing its LevelDB folder as such a kill leaves it, and the journal as it leaves it.
 */

const TABLE = 'leaseq-repair';
const dir = mkdtempSync(join(tmpdir(), 'leaseq-index-repair-'));
const journal = join(dir, 'dynamodb-writes.jsonl');

afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Value = Record<string, { S?: string }>;
type Db = {
  iterator(range: { gt: string; lt: string }): AsyncIterable<[string, Value]>;
  put(key: string, value: Value): Promise<void>;
  close(): Promise<void>;
};
/** dynalite's own LevelDB package, on its folder while no emulator holds it. */
const Level = (
  createRequire(createRequire(import.meta.url).resolve('dynalite'))('level') as {
    Level: new (path: string, options: { valueEncoding: 'json' }) => Db;
  }
).Level;

async function withEmulators<T>(use: (e: Awaited<ReturnType<typeof start>>) => Promise<T>): Promise<T> {
  const e = await start();
  try {
    return await use(e);
  } finally {
    e.clients.destroy();
    await e.emulators.close();
  }
}

async function start() {
  const emulators = await startEmulators({ dataDir: dir, shardLimit: 10, dynamodb: 'dynalite' });
  return { emulators, clients: createClients({ region: 'us-east-1', endpoints: emulators.endpoints }) };
}

const item = (pk: string, place: string) => ({ pk, sk: 'S', gsi1pk: place, gsi1sk: '1', state: place });

describe('the index repair at start', () => {
  it('checks everything in a folder without a journal, then only what was not answered', async () => {
    await withEmulators(async ({ emulators, clients }) => {
      expect(emulators.unsettledWrites).toBeUndefined();
      const admin = createAdminClients(emulators.endpoints, 'us-east-1');
      // dynalite answers a new table's writes once its timer has made it ACTIVE.
      await ensureTable(admin, TABLE, false).finally(() => admin.destroy());
      for (const pk of ['a', 'b'])
        await clients.doc.send(new PutCommand({ TableName: TABLE, Item: item(pk, 'ready') }));
      expect(await repairIndex(clients, TABLE)).toBe(0);
      emulators.indexRepaired(TABLE);
    });
    // Every write was answered: nothing to check at the next start.
    await withEmulators(async ({ emulators }) => expect(emulators.unsettledWrites).toEqual([]));
  });

  it('mends the items of unanswered writes a kill tore from their index entries', async () => {
    await withEmulators(({ clients }) =>
      clients.doc.send(new PutCommand({ TableName: TABLE, Item: item('a', 'leased') })),
    );
    // Killed after dynalite moved `a`'s index entry to `leased`, before it wrote the item: the
    // item is as it was. And while writing the line of another write, which dynalite never read.
    const db = new Level(join(dir, 'dynamodb'), { valueEncoding: 'json' });
    const prefix = `item-${TABLE}~`;
    for await (const [key, value] of db.iterator({ gt: prefix, lt: `${prefix}\uffff` }))
      if (value.pk?.S === 'a') await db.put(key, { ...value, gsi1pk: { S: 'ready' }, state: { S: 'ready' } });
    await db.close();
    appendFileSync(
      journal,
      `${JSON.stringify({ id: 7, table: TABLE, key: { pk: { S: 'a' }, sk: { S: 'S' } } })}\n{"id":8,"tab`,
    );
    const expected = [{ table: TABLE, key: { pk: 'a', sk: 'S' } }];
    await withEmulators(async ({ emulators, clients }) => {
      expect(await indexDisagreements(clients, TABLE)).toMatchObject({
        stale: [{ entry: { pk: 'a', gsi1pk: 'leased' }, row: { gsi1pk: 'ready' } }],
        missing: [{ pk: 'a', gsi1pk: 'ready' }],
      });
      expect(emulators.unsettledWrites).toEqual(expected);
      const suspects = emulators.unsettledWrites?.map((w) => w.key);
      expect(await repairIndex(clients, TABLE, suspects)).toBe(2);
      expect(await indexDisagreements(clients, TABLE)).toEqual({ stale: [], missing: [] });
    });
    // Closed before it was told `a` is mended, as a kill then: `a` is checked again.
    await withEmulators(async ({ emulators }) => {
      expect(emulators.unsettledWrites).toEqual(expected);
      emulators.indexRepaired(TABLE);
    });
    await withEmulators(async ({ emulators }) => expect(emulators.unsettledWrites).toEqual([]));
  });
});
