import {
  CreateTableCommand,
  DescribeTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import {
  CreateStreamCommand,
  DescribeStreamSummaryCommand,
  IncreaseStreamRetentionPeriodCommand,
  waitUntilStreamExists,
} from '@aws-sdk/client-kinesis';
import { CreateBucketCommand, HeadBucketCommand } from '@aws-sdk/client-s3';
import type { AwsClients } from '../../functions/aws/clients.js';
import { type TenantConfig, tenantStreams } from '../../functions/core/config.js';
import { GSI1, TTL_ATTRIBUTE } from '../../functions/store/keys.js';
import type { AdminClients } from './admin-clients.js';
import { listOpenShards, reshardStream } from './reshard.js';

/**
 * Creates locally what the tenant stack creates on AWS, and leaves what already exists as
 * it is (a restart on the same data folder keeps every record and item), but for a stream whose
 * shards the file changed, which it reshards as the stack would. Answers once the
 * table and every stream are ACTIVE, whoever created them: until then the emulators, like AWS,
 * answer ResourceNotFoundException to reads and writes (dynalite flips a new table to ACTIVE
 * on a timer, which a loaded machine runs late).
 */
export async function ensureResources(
  clients: AwsClients,
  admin: AdminClients,
  tenant: TenantConfig,
  names: {
    table: string;
    bucket: string;
    /** Expire items by their TTL attribute, as the stack does (dynalite has no TTL). */
    ttl: boolean;
  },
): Promise<void> {
  await Promise.all([
    ensureTable(admin, names.table, names.ttl),
    ensureBucket(clients, names.bucket),
    ...[...tenantStreams(tenant)].map(([stream, s]) =>
      ensureStream(admin, stream, s.shards, s.retention_hours),
    ),
  ]);
}

/**
 * The SDK's waiters, polling at the emulators' pace (their defaults start at 10-20 s): a few
 * tens of milliseconds first, then up to a second apart, for at most two minutes.
 */
const ACTIVE_WAIT = { minDelay: 0.05, maxDelay: 1, maxWaitTime: 120 };

/** The table, created if missing, once it is ACTIVE. */
export async function ensureTable(clients: AdminClients, table: string, ttl: boolean): Promise<void> {
  const existed = await exists(() => clients.dynamodb.send(new DescribeTableCommand({ TableName: table })));
  if (!existed) await createTable(clients, table);
  await waitUntilTableExists({ client: clients.dynamodb, ...ACTIVE_WAIT }, { TableName: table });
  if (!existed && ttl)
    await clients.dynamodb.send(
      new UpdateTimeToLiveCommand({
        TableName: table,
        TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
      }),
    );
}

/** The table as the stack defines it (tests create it as "someone else" too). */
export async function createTable(clients: AdminClients, table: string): Promise<void> {
  await clients.dynamodb.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
        { AttributeName: 'gsi1pk', AttributeType: 'S' },
        { AttributeName: 'gsi1sk', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: GSI1,
          KeySchema: [
            { AttributeName: 'gsi1pk', KeyType: 'HASH' },
            { AttributeName: 'gsi1sk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
      ],
    }),
  );
}

async function ensureBucket(clients: AwsClients, bucket: string): Promise<void> {
  const s3 = await clients.s3.client();
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  }
}

/**
 * Creates the stream with the file's shards, or waits for the one that exists and reshards it
 * when the file now names another count of shards (its retention stays as it is).
 */
export async function ensureStream(
  clients: AdminClients,
  stream: string,
  shards: number,
  retentionHours: number,
  log: (line: string) => void = console.log,
): Promise<void> {
  const waitActive = () =>
    waitUntilStreamExists({ client: clients.kinesis, ...ACTIVE_WAIT }, { StreamName: stream });
  if (await exists(() => clients.kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream })))) {
    await waitActive();
    const open = (await listOpenShards(clients.kinesis, stream)).length;
    if (open !== shards) {
      const done = await reshardStream(clients.kinesis, stream, shards);
      log(
        `stream ${stream}: resharded from ${done.before} to ${done.after} shards (${done.steps.length} steps)`,
      );
    }
    return;
  }
  await clients.kinesis.send(new CreateStreamCommand({ StreamName: stream, ShardCount: shards }));
  await waitActive();
  if (retentionHours > 24) {
    await clients.kinesis.send(
      new IncreaseStreamRetentionPeriodCommand({ StreamName: stream, RetentionPeriodHours: retentionHours }),
    );
    await waitActive();
  }
}

/** Whether a describe call finds its resource (in any status). */
async function exists(describe: () => Promise<unknown>): Promise<boolean> {
  try {
    await describe();
    return true;
  } catch (err) {
    if ((err as Error).name === 'ResourceNotFoundException') return false;
    throw err;
  }
}
