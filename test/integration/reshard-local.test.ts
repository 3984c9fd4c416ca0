import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateStreamCommand, ListShardsCommand, type Shard } from '@aws-sdk/client-kinesis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsClients, createClients } from '../../functions/aws/clients.js';
import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  PutRecordsCommand,
} from '../../functions/aws/kinesis.js';
import { HASH_KEYS } from '../../functions/core/reshard-plan.js';
import { type AdminClients, createAdminClients } from '../../infra/local/admin-clients.js';
import { type Emulators, startEmulators } from '../../infra/local/emulators.js';
import { listOpenShards, reshardStream } from '../../infra/local/reshard.js';
import { ensureStream } from '../../infra/local/resources.js';

/**
 * Resharding a local stream against kinesalite, which has SplitShard and MergeShards but no
 * UpdateShardCount. Its shard limit counts open shards only (closed ones do not), and a plan never
 * has more open than before or after: 20 holds 2 → 4 → 8 → 3 (25 shards made in all) beside
 * the ensureStream tests' streams.
 */

let emulators: Emulators;
let admin: AdminClients;
let clients: AwsClients;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'leaseq-reshard-'));
  emulators = await startEmulators({ dataDir, shardLimit: 20, dynamodb: 'dynalite' });
  admin = createAdminClients(emulators.endpoints);
  clients = createClients({ region: 'us-east-1', endpoints: emulators.endpoints });
});
afterAll(async () => {
  admin?.destroy();
  clients?.destroy();
  await emulators?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function allShards(stream: string): Promise<Shard[]> {
  const out = await admin.kinesis.send(new ListShardsCommand({ StreamName: stream }));
  return out.Shards ?? [];
}

const range = (s: Shard) => ({
  start: BigInt(s.HashKeyRange?.StartingHashKey as string),
  end: BigInt(s.HashKeyRange?.EndingHashKey as string),
});

/**
 * Exactly `count` open shards, contiguous over every hash key and even (largest ≤ 1.004 ×
 * smallest); every closed shard is a parent of shards that together cover its range.
 */
async function expectResharded(stream: string, count: number): Promise<void> {
  const shards = await allShards(stream);
  const open = shards.filter((s) => s.SequenceNumberRange?.EndingSequenceNumber === undefined);
  expect(open).toHaveLength(count);
  const ranges = open.map(range).sort((a, b) => (a.start < b.start ? -1 : 1));
  let next = 0n;
  for (const r of ranges) {
    expect(r.start).toBe(next);
    next = r.end + 1n;
  }
  expect(next).toBe(HASH_KEYS);
  const sizes = ranges.map((r) => r.end - r.start + 1n).sort((a, b) => (a < b ? -1 : 1));
  expect((sizes[sizes.length - 1] as bigint) * 1000n <= (sizes[0] as bigint) * 1004n).toBe(true);

  for (const closed of shards.filter((s) => s.SequenceNumberRange?.EndingSequenceNumber !== undefined)) {
    const children = shards.filter(
      (s) => s.ParentShardId === closed.ShardId || s.AdjacentParentShardId === closed.ShardId,
    );
    expect(children.length, `children of ${closed.ShardId}`).toBeGreaterThan(0);
    const parent = range(closed);
    const covered = children
      .map(range)
      .sort((a, b) => (a.start < b.start ? -1 : 1))
      .reduce((at, r) => (r.start <= at && r.end >= at ? r.end + 1n : at), parent.start);
    expect(covered > parent.end, `children of ${closed.ShardId} cover its range`).toBe(true);
  }
}

async function createStream(stream: string, shards: number): Promise<void> {
  await admin.kinesis.send(new CreateStreamCommand({ StreamName: stream, ShardCount: shards }));
}

describe('reshardStream', () => {
  it('takes a stream 2 → 4 → 8 → 3, open shards even and contiguous after each, closed ones with children', async () => {
    const stream = 'reshard-steps';
    await createStream(stream, 2);

    const up = await reshardStream(admin.kinesis, stream, 4);
    expect(up).toMatchObject({ stream, before: 2, after: 4 });
    // An even 2 to an even 4: each shard split at its midpoint, nothing else.
    expect(up.steps.map((s) => s.kind)).toEqual(['split', 'split']);
    await expectResharded(stream, 4);

    const more = await reshardStream(admin.kinesis, stream, 8);
    expect(more).toMatchObject({ before: 4, after: 8 });
    expect(more.steps).toHaveLength(4);
    await expectResharded(stream, 8);

    const down = await reshardStream(admin.kinesis, stream, 3);
    expect(down).toMatchObject({ before: 8, after: 3 });
    expect(down.steps.filter((s) => s.kind === 'merge')).toHaveLength(7);
    expect(down.steps.filter((s) => s.kind === 'split')).toHaveLength(2);
    await expectResharded(stream, 3);
    expect(await allShards(stream)).toHaveLength(2 + 4 + 8 + 7 + 4);

    // At the count it has, nothing to do.
    expect((await reshardStream(admin.kinesis, stream, 3)).steps).toEqual([]);
  });

  it('keeps the records written before it in the closed shards, and routes new ones to the open', async () => {
    const stream = 'reshard-records';
    await createStream(stream, 1);
    // At the count it has: waits for ACTIVE, nothing else.
    await ensureStream(admin, stream, 1, 24, () => {});
    const put = (data: string) =>
      clients.kinesis.send(
        new PutRecordsCommand({
          StreamName: stream,
          Records: [{ Data: Buffer.from(data), PartitionKey: data, ExplicitHashKey: '0' }],
        }),
      );
    const before = await put('before');
    const first = before.Records?.[0]?.ShardId as string;

    await reshardStream(admin.kinesis, stream, 2);
    const after = await put('after');
    const open = await listOpenShards(admin.kinesis, stream);
    expect(open.map((s) => s.id)).toContain(after.Records?.[0]?.ShardId);
    expect(after.Records?.[0]?.ShardId).not.toBe(first);

    const it = await clients.kinesis.send(
      new GetShardIteratorCommand({ StreamName: stream, ShardId: first, ShardIteratorType: 'TRIM_HORIZON' }),
    );
    const read = await clients.kinesis.send(
      new GetRecordsCommand({ ShardIterator: it.ShardIterator as string }),
    );
    expect((read.Records ?? []).map((r) => Buffer.from(r.Data as Uint8Array).toString())).toEqual(['before']);
  });

  it('refuses a target out of bounds before touching the stream', async () => {
    const stream = 'reshard-refused';
    await createStream(stream, 2);
    await ensureStream(admin, stream, 2, 24, () => {});
    await expect(reshardStream(admin.kinesis, stream, 0)).rejects.toThrow('at least 1 shard');
    await expect(reshardStream(admin.kinesis, stream, 4, { maxShards: 3 })).rejects.toThrow(
      'at most 3 shards',
    );
    expect(await allShards(stream)).toHaveLength(2);
  });
});

describe('ensureStream', () => {
  it("reshards an existing stream to the file's shards, saying from what to what, and leaves an unchanged one", async () => {
    const stream = 'reshard-ensured';
    const lines: string[] = [];
    const log = (line: string) => lines.push(line);

    await ensureStream(admin, stream, 2, 24, log);
    await expectResharded(stream, 2);
    expect(lines).toEqual([]);

    await ensureStream(admin, stream, 5, 24, log);
    await expectResharded(stream, 5);
    expect(lines).toEqual([`stream ${stream}: resharded from 2 to 5 shards (5 steps)`]);

    await ensureStream(admin, stream, 5, 24, log);
    expect(lines).toHaveLength(1);

    await ensureStream(admin, stream, 1, 24, log);
    await expectResharded(stream, 1);
    expect(lines[1]).toBe(`stream ${stream}: resharded from 5 to 1 shards (4 steps)`);
  });
});
