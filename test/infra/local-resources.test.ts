import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { CreateStreamCommand, DescribeStreamSummaryCommand } from '@aws-sdk/client-kinesis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsClients, createClients } from '../../functions/aws/clients.js';
import { PutCommand, QueryCommand } from '../../functions/aws/dynamodb.js';
import { PutRecordsCommand } from '../../functions/aws/kinesis.js';
import { ownStreamName, parseTenantConfig } from '../../functions/core/config.js';
import { GSI1 } from '../../functions/store/keys.js';
import { type AdminClients, createAdminClients } from '../../infra/local/admin-clients.js';
import { createTable, ensureResources, ensureTable } from '../../infra/local/resources.js';

/**
 * The local runtime's start-up against emulators that, like AWS, answer CREATING for a while
 * after a table or stream is created (the runtime's own run with 0 ms, where a loaded machine
 * still sees CREATING): nothing is used before it is ACTIVE.
 */

const require = createRequire(import.meta.url);
const dynalite = require('dynalite') as (opts: Record<string, unknown>) => Server;
const kinesalite = require('kinesalite') as (opts: Record<string, unknown>) => Server;
const S3rver = require('s3rver') as new (
  opts: Record<string, unknown>,
) => { run(): Promise<AddressInfo>; close(): Promise<void> };

// The table longer than the streams: a start-up that waits only for its streams still fails.
const TABLE_CREATING_MS = 1500;
const STREAM_CREATING_MS = 500;

let servers: Server[] = [];
let s3: InstanceType<typeof S3rver>;
let s3Dir: string;
let clients: AwsClients;
let admin: AdminClients;

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  s3Dir = mkdtempSync(join(tmpdir(), 'leaseq-resources-'));
  s3 = new S3rver({ address: '127.0.0.1', port: 0, directory: s3Dir, silent: true });
  const endpoints = {
    dynamodb: await listen(dynalite({ createTableMs: TABLE_CREATING_MS })),
    kinesis: await listen(kinesalite({ createStreamMs: STREAM_CREATING_MS, updateStreamMs: 0 })),
    s3: `http://127.0.0.1:${(await s3.run()).port}`,
  };
  clients = createClients({ region: 'us-east-1', endpoints, maxAttempts: 1 });
  admin = createAdminClients(endpoints);
});

afterAll(async () => {
  clients?.destroy();
  admin?.destroy();
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        }),
    ),
  );
  servers = [];
  await s3?.close();
  if (s3Dir) rmSync(s3Dir, { recursive: true, force: true });
});

function tenantOf(name: string) {
  return parseTenantConfig({ tenant: name, queues: { jobs: { shards: 1 } } });
}

/** What the runtime does right after start-up: write and query the table, append to the log. */
async function useAtOnce(table: string, stream: string): Promise<void> {
  await clients.doc.send(
    new PutCommand({ TableName: table, Item: { pk: 'p', sk: 's', gsi1pk: 'g', gsi1sk: '1' } }),
  );
  const indexed = await clients.doc.send(
    new QueryCommand({
      TableName: table,
      IndexName: GSI1,
      KeyConditionExpression: 'gsi1pk = :g',
      ExpressionAttributeValues: { ':g': 'g' },
    }),
  );
  expect(indexed.Items).toHaveLength(1);
  const appended = await clients.kinesis.send(
    new PutRecordsCommand({ StreamName: stream, Records: [{ PartitionKey: 'k', Data: Buffer.from('x') }] }),
  );
  expect(appended.FailedRecordCount ?? 0).toBe(0);
  const table$ = await admin.dynamodb.send(new DescribeTableCommand({ TableName: table }));
  expect(table$.Table?.TableStatus).toBe('ACTIVE');
  const stream$ = await admin.kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream }));
  expect(stream$.StreamDescriptionSummary?.StreamStatus).toBe('ACTIVE');
}

describe('ensureResources', () => {
  it('answers only once the table and the streams it created are ACTIVE', async () => {
    const tenant = tenantOf('fresh');
    const table = 'leaseq-fresh';
    const started = Date.now();
    await ensureResources(clients, admin, tenant, { table, bucket: 'leaseq-fresh-local', ttl: false });
    await useAtOnce(table, ownStreamName('fresh', 'jobs'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(TABLE_CREATING_MS - 50);
  });

  it('waits for a table that exists but is still being created (a second start just after the first)', async () => {
    const tenant = tenantOf('racing');
    await createTable(admin, 'leaseq-racing');
    await ensureResources(clients, admin, tenant, {
      table: 'leaseq-racing',
      bucket: 'leaseq-racing-local',
      ttl: false,
    });
    await useAtOnce('leaseq-racing', ownStreamName('racing', 'jobs'));
  });

  it('waits for a stream that exists but is still being created', async () => {
    const tenant = tenantOf('streaming');
    const table = 'leaseq-streaming';
    await ensureTable(admin, table, false);
    const stream = ownStreamName('streaming', 'jobs');
    await admin.kinesis.send(new CreateStreamCommand({ StreamName: stream, ShardCount: 1 }));
    await ensureResources(clients, admin, tenant, { table, bucket: 'leaseq-streaming-local', ttl: false });
    await useAtOnce(table, stream);
  });
});
