import { CreateTableCommand, DescribeTableCommand, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import {
  CreateStreamCommand,
  DescribeStreamSummaryCommand,
  IncreaseStreamRetentionPeriodCommand,
} from '@aws-sdk/client-kinesis';
import { CreateBucketCommand, HeadBucketCommand } from '@aws-sdk/client-s3';
import type { AwsClients } from '../../functions/aws/clients.js';
import { sleep } from '../../functions/core/async.js';
import { streamName, type TenantConfig } from '../../functions/core/config.js';
import { GSI1, TTL_ATTRIBUTE } from '../../functions/store/keys.js';

/**
 * Creates locally what the tenant stack creates on AWS, and leaves what already exists as
 * it is (a restart on the same data folder keeps every record and item).
 */
export async function ensureResources(
  clients: AwsClients,
  tenant: TenantConfig,
  names: {
    table: string;
    bucket: string;
    /** Expire items by their TTL attribute, as the stack does (dynalite has no TTL). */
    ttl: boolean;
  },
): Promise<void> {
  await Promise.all([
    ensureTable(clients, names.table, names.ttl),
    ensureBucket(clients, names.bucket),
    ...Object.entries(tenant.queues).map(([queue, q]) =>
      ensureStream(clients, streamName(tenant.tenant, queue), q.shards, q.retention_hours),
    ),
  ]);
}

async function ensureTable(clients: AwsClients, table: string, ttl: boolean): Promise<void> {
  try {
    await clients.dynamodb.send(new DescribeTableCommand({ TableName: table }));
    return;
  } catch (err) {
    if ((err as Error).name !== 'ResourceNotFoundException') throw err;
  }
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
  if (ttl)
    await clients.dynamodb.send(
      new UpdateTimeToLiveCommand({
        TableName: table,
        TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
      }),
    );
}

async function ensureBucket(clients: AwsClients, bucket: string): Promise<void> {
  try {
    await clients.s3.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch {
    await clients.s3.send(new CreateBucketCommand({ Bucket: bucket }));
  }
}

async function ensureStream(
  clients: AwsClients,
  stream: string,
  shards: number,
  retentionHours: number,
): Promise<void> {
  try {
    await clients.kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream }));
    return;
  } catch (err) {
    if ((err as Error).name !== 'ResourceNotFoundException') throw err;
  }
  await clients.kinesis.send(new CreateStreamCommand({ StreamName: stream, ShardCount: shards }));
  for (let i = 0; i < 100; i++) {
    const out = await clients.kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream }));
    if (out.StreamDescriptionSummary?.StreamStatus === 'ACTIVE') {
      if (retentionHours > 24) {
        await clients.kinesis.send(
          new IncreaseStreamRetentionPeriodCommand({
            StreamName: stream,
            RetentionPeriodHours: retentionHours,
          }),
        );
      }
      return;
    }
    await sleep(20);
  }
  throw new Error(`stream ${stream} did not become ACTIVE`);
}
