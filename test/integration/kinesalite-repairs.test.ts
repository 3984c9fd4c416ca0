import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeStreamSummaryCommand } from '@aws-sdk/client-kinesis';
import { afterAll, describe, expect, it } from 'vitest';
import { type AwsClients, createClients } from '../../functions/aws/clients.js';
import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  PutRecordsCommand,
} from '../../functions/aws/kinesis.js';
import { type AdminClients, createAdminClients } from '../../infra/local/admin-clients.js';
import { type Emulators, startEmulators } from '../../infra/local/emulators.js';
import { listOpenShards, reshardStream } from '../../infra/local/reshard.js';
import { ensureStream } from '../../infra/local/resources.js';

/**
 * Where kinesalite parts from Kinesis in ways a resharded stream or a killed runtime meets, as the
 * emulators' thread mends them (infra/local/kinesalite-repairs.mjs): an AT_TIMESTAMP iterator on a
 * shard with no record at or after the time, and a stream a kill left UPDATING.
 */

const dirs: string[] = [];
const running: { emulators: Emulators; admin: AdminClients; clients: AwsClients }[] = [];

async function start(dataDir: string) {
  const emulators = await startEmulators({ dataDir, shardLimit: 20, dynamodb: 'dynalite' });
  const admin = createAdminClients(emulators.endpoints);
  const clients = createClients({ region: 'us-east-1', endpoints: emulators.endpoints });
  const started = { emulators, admin, clients };
  running.push(started);
  return started;
}

async function stop(started: Awaited<ReturnType<typeof start>>) {
  running.splice(running.indexOf(started), 1);
  started.admin.destroy();
  started.clients.destroy();
  await started.emulators.close();
}

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-kinesalite-'));
  dirs.push(dir);
  return dir;
}

afterAll(async () => {
  for (const started of [...running]) await stop(started);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('GetShardIterator AT_TIMESTAMP', () => {
  it('answers on a closed shard after its last record (its read ends) and on a quiet open one (its read gets what comes next)', async () => {
    const { admin, clients } = await start(folder());
    const stream = 'quiet-after';
    await ensureStream(admin, stream, 1, 24, () => {});
    const put = async (data: string) => {
      const out = await clients.kinesis.send(
        new PutRecordsCommand({
          StreamName: stream,
          Records: [{ Data: Buffer.from(data), PartitionKey: data }],
        }),
      );
      return out.Records?.[0]?.ShardId as string;
    };
    const parent = await put('before');
    await reshardStream(admin.kinesis, stream, 2);
    // A time past the parent's last record and the reshard.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const after = new Date();
    const iteratorAt = async (shard: string) =>
      (
        await clients.kinesis.send(
          new GetShardIteratorCommand({
            StreamName: stream,
            ShardId: shard,
            ShardIteratorType: 'AT_TIMESTAMP',
            Timestamp: after,
          }),
        )
      ).ShardIterator as string;

    const closed = await clients.kinesis.send(
      new GetRecordsCommand({ ShardIterator: await iteratorAt(parent) }),
    );
    expect(closed.Records).toEqual([]);
    expect(closed.NextShardIterator).toBeUndefined();

    const [child] = await listOpenShards(admin.kinesis, stream);
    const quiet = await iteratorAt(child?.id as string);
    const landed = await clients.kinesis.send(
      new PutRecordsCommand({
        StreamName: stream,
        Records: [{ Data: Buffer.from('next'), PartitionKey: 'next', ExplicitHashKey: `${child?.start}` }],
      }),
    );
    expect(landed.Records?.[0]?.ShardId).toBe(child?.id);
    const read = await clients.kinesis.send(new GetRecordsCommand({ ShardIterator: quiet }));
    expect((read.Records ?? []).map((r) => Buffer.from(r.Data as Uint8Array).toString())).toEqual(['next']);
  });
});

describe('a stream a kill left UPDATING', () => {
  it('is ACTIVE with its shards as they were at the next start, and reshards', async () => {
    const dataDir = folder();
    const first = await start(dataDir);
    const stream = 'killed-mid-split';
    await ensureStream(first.admin, stream, 2, 24, () => {});
    await stop(first);

    // What kinesalite's first write of a split leaves when the process dies before its second.
    const require = createRequire(import.meta.url);
    const store = require('kinesalite/db').create({ path: join(dataDir, 'kinesis') });
    const saved = await store.metaDb.get(stream);
    await store.metaDb.put(stream, { ...saved, StreamStatus: 'UPDATING' });
    await store.db.close();

    const next = await start(dataDir);
    const summary = await next.admin.kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream }));
    expect(summary.StreamDescriptionSummary?.StreamStatus).toBe('ACTIVE');
    expect(await listOpenShards(next.admin.kinesis, stream)).toHaveLength(2);
    expect((await reshardStream(next.admin.kinesis, stream, 4)).after).toBe(4);
  });
});
