import { readFileSync } from 'node:fs';
import { type CfnElement, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../functions/core/config.js';
import { buildApp } from '../../infra/build-app.js';
import { owned } from '../helpers/owned.js';

// Inline code instead of the esbuild bundle: these tests are about the template, not the handler.
const functionCode = lambda.Code.fromInline('export const handler = async () => ({ statusCode: 200 });');

const localFile: unknown = JSON.parse(
  readFileSync(new URL('../../tenants/local.json', import.meta.url), 'utf8'),
);
const acmeFile = {
  tenant: 'acme',
  queues: { orders: { ordered: true, shards: 3, retention_hours: 72, dlq_retention_hours: 200 } },
};

const pushFile = {
  tenant: 'push',
  queues: {
    events: {
      shards: 1,
      consumers: [
        {
          name: 'billing',
          entry: 'examples/lambda-consumer.ts',
          handler: 'main',
          batch_size: 50,
          max_batching_window_seconds: 2,
          timeout_seconds: 120,
          memory_mb: 1024,
        },
      ],
    },
    jobs: { shards: 1 },
  },
};

/** A shared stream and a Lambda consumer's own stream on enhanced fan-out, beside the tenant's stream, which polls. */
const fanFile = {
  tenant: 'fan',
  streams: { fast: { shards: 2, fan_out: true } },
  queues: {
    a: { stream: 'fast' },
    b: { stream: 'fast' },
    slow: {},
    events: { fan_out: true, consumers: [{ name: 'billing', entry: 'examples/lambda-consumer.ts' }] },
  },
};

// One app for the file: each stack is synthesized once and every test reads its template.
const { app, stack: local } = buildApp(localFile, { functionCode });
const { stack: acme } = buildApp(owned(acmeFile), { app, functionCode });
const { stack: push } = buildApp(owned(pushFile), { app, functionCode });
const { stack: fan } = buildApp(owned(fanFile), { app, functionCode });
// Every stream pinned on or off: no busy-time fan-out.
const { stack: pinnedStack } = buildApp(
  owned({
    tenant: 'pinned',
    queues: { jobs: { shards: 1, fan_out: false }, fast: { shards: 1, fan_out: true } },
  }),
  { app, functionCode },
);
const template = Template.fromStack(local);
const acmeTemplate = Template.fromStack(acme);
const pushTemplate = Template.fromStack(push);
const fanTemplate = Template.fromStack(fan);
const pinned = Template.fromStack(pinnedStack);

type Statement = { Effect: string; Action: string | string[]; Resource: unknown };

/** Every statement of the identity policies attached to a function's role. */
function functionStatements(t: Template, functionLogicalId: string): Statement[] {
  const fn = t.toJSON().Resources[functionLogicalId];
  const roleId: string = fn.Properties.Role['Fn::GetAtt'][0];
  return Object.values(t.findResources('AWS::IAM::Policy'))
    .filter((p) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
}

const asList = <T>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);

/** The statements of a function's policies whose actions are all of one service (`kinesis:`…). */
function serviceStatements(statements: Statement[], prefix: string): Statement[] {
  return statements.filter((s) => asList(s.Action)[0]?.startsWith(prefix));
}
/** Busy-time fan-out's actions: on streams' consumers, and dispatch's mappings (their own test below). */
const BUSY_ACTIONS = new Set([
  'kinesis:DescribeStreamSummary',
  'kinesis:RegisterStreamConsumer',
  'kinesis:DescribeStreamConsumer',
  'kinesis:DeregisterStreamConsumer',
  'kinesis:SubscribeToShard',
  'lambda:CreateEventSourceMapping',
  'lambda:ListEventSourceMappings',
  'lambda:DeleteEventSourceMapping',
]);
const isBusyGrant = (s: Statement) => asList(s.Action).every((a) => BUSY_ACTIONS.has(a));
/** A function's statements, less busy-time fan-out's. */
const statementsBesideBusy = (t: Template, id: string) =>
  functionStatements(t, id).filter((s) => !isBusyGrant(s));
const actionsOf = (ss: Statement[]) => new Set(ss.flatMap((s) => asList(s.Action)));
const resourcesOf = (ss: Statement[]) => ss.flatMap((s) => asList(s.Resource));
const arnOf = (logicalId: string) => ({ 'Fn::GetAtt': [logicalId, 'Arn'] });

const TABLE_ITEM_ACTIONS = new Set([
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchGetItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:Query',
  'dynamodb:ConditionCheckItem',
]);
const PRODUCE_ACTIONS = new Set([
  'kinesis:PutRecords',
  'kinesis:PutRecord',
  'kinesis:DescribeStreamSummary',
  'kinesis:ListShards',
]);
const CONSUME_ACTIONS = new Set([
  'kinesis:GetRecords',
  'kinesis:GetShardIterator',
  'kinesis:DescribeStream',
  'kinesis:DescribeStreamSummary',
  'kinesis:ListShards',
  'kinesis:ListStreams',
]);

/** The logical id of an L2 construct's resource. */
const logicalId = (c: { node: { defaultChild?: unknown } }) =>
  Stack.of(c as never).getLogicalId(c.node.defaultChild as CfnElement);

/** A function's log-writing statements: its own log group only. */
function expectOwnLogs(t: Template, functionLogicalId: string, statements: Statement[]): Statement[] {
  const logGroupId: string = t.toJSON().Resources[functionLogicalId].Properties.LoggingConfig.LogGroup.Ref;
  const logs = serviceStatements(statements, 'logs:');
  expect(actionsOf(logs)).toEqual(new Set(['logs:CreateLogStream', 'logs:PutLogEvents']));
  expect(resourcesOf(logs)).toEqual([arnOf(logGroupId)]);
  return logs;
}

/** PostToConnection on the stack's own wake channel stage, and nothing else of API Gateway. */
function expectWakeGrant(t: Template, statements: Statement[]): Statement[] {
  const wake = serviceStatements(statements, 'execute-api:');
  const channelId = Object.keys(
    t.findResources('AWS::ApiGatewayV2::Api', { Properties: { ProtocolType: 'WEBSOCKET' } }),
  )[0];
  expect(actionsOf(wake)).toEqual(new Set(['execute-api:ManageConnections']));
  expect(JSON.stringify(resourcesOf(wake))).toContain(`{"Ref":"${channelId}"},"/live/POST/@connections/*"`);
  return wake;
}

function onlyId(t: Template, type: string): string {
  const ids = Object.keys(t.findResources(type));
  expect(ids).toHaveLength(1);
  return ids[0] as string;
}

/** The logical id of the function whose POWERTOOLS_SERVICE_NAME is `service`. */
function functionId(t: Template, service: string): string {
  const ids = Object.entries(t.findResources('AWS::Lambda::Function'))
    .filter(([, r]) => r.Properties.Environment.Variables.POWERTOOLS_SERVICE_NAME === service)
    .map(([id]) => id);
  expect(ids).toHaveLength(1);
  return ids[0] as string;
}

function streamIds(t: Template): Record<string, string> {
  return Object.fromEntries(
    Object.entries(t.findResources('AWS::Kinesis::Stream')).map(([id, r]) => [r.Properties.Name, id]),
  );
}

describe('TenantStack (tenants/local.json)', () => {
  it('is the stack Leaseq-local, tagged with its tenant', () => {
    expect(local.stackName).toBe('Leaseq-local');
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      Tags: Match.arrayWith([{ Key: 'leaseq:tenant', Value: 'local' }]),
    });
  });

  it('has one KMS-encrypted stream its queues share, keeping the longest retention they ask for', () => {
    template.resourceCountIs('AWS::Kinesis::Stream', 1);
    // ledger is critical: its tier keeps three days, so the stream it shares with jobs does.
    template.hasResourceProperties('AWS::Kinesis::Stream', {
      Name: 'leaseq-local_shared',
      ShardCount: 1,
      RetentionPeriodHours: 72,
      StreamEncryption: { EncryptionType: 'KMS', KeyId: 'alias/aws/kinesis' },
    });
  });

  it('has the table: pk/sk strings, on demand, TTL on ttl, PITR, retained', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        TableName: 'leaseq-local',
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
          { AttributeName: 'gsi1pk', AttributeType: 'S' },
          { AttributeName: 'gsi1sk', AttributeType: 'S' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        StreamSpecification: { StreamViewType: 'KEYS_ONLY' },
      },
    });
  });

  it('has the index gsi1: gsi1pk/gsi1sk, projecting whole items', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      GlobalSecondaryIndexes: [
        {
          IndexName: 'gsi1',
          KeySchema: [
            { AttributeName: 'gsi1pk', KeyType: 'HASH' },
            { AttributeName: 'gsi1sk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
      ],
    });
  });

  it('has a private, encrypted, TLS-only bucket that keeps claims as long as the DLQ, segments as the log', () => {
    template.hasResource('AWS::S3::Bucket', {
      DeletionPolicy: 'Retain',
      Properties: {
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
        },
        VersioningConfiguration: Match.absent(),
        LifecycleConfiguration: {
          Rules: [
            // dlq_retention_hours defaults to 336: 14 days.
            { Id: 'claims-jobs', Prefix: 'claims/jobs/', ExpirationInDays: 14, Status: 'Enabled' },
            { Id: 'claims-ledger', Prefix: 'claims/ledger/', ExpirationInDays: 14, Status: 'Enabled' },
            // Segments: the retention (72 h: ledger is critical, and jobs shares its stream) and a last lease of 1 h.
            { Id: 'segments-jobs', Prefix: 'segments/jobs/', ExpirationInDays: 4, Status: 'Enabled' },
            { Id: 'segments-ledger', Prefix: 'segments/ledger/', ExpirationInDays: 4, Status: 'Enabled' },
            {
              Id: 'abort-incomplete-uploads',
              AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
              Status: 'Enabled',
            },
          ],
        },
      },
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  it("logs the claims bucket's requests to a private, retained logs bucket of its own", () => {
    const claims = logicalId(local.tenant.bucket);
    const logsBucket = logicalId(local.tenant.accessLogsBucket);
    template.resourceCountIs('AWS::S3::Bucket', 2);
    expect(template.toJSON().Resources[claims].Properties.LoggingConfiguration).toEqual({
      DestinationBucketName: { Ref: logsBucket },
      LogFilePrefix: 'claims-bucket/',
    });
    const resource = template.toJSON().Resources[logsBucket];
    expect(resource.DeletionPolicy).toBe('Retain');
    expect(resource.Properties).toMatchObject({
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      LifecycleConfiguration: {
        Rules: [{ Id: 'expire-access-logs', ExpirationInDays: 90, Status: 'Enabled' }],
      },
    });
    // No log-delivery ACL: S3's logging service may put objects under the prefix, for this
    // claims bucket of this account only; and the logs bucket is TLS-only like the claims bucket.
    expect(resource.Properties.AccessControl).toBeUndefined();
    const policy = Object.values(template.findResources('AWS::S3::BucketPolicy')).find(
      (p) => p.Properties.Bucket.Ref === logsBucket,
    );
    expect(policy?.Properties.PolicyDocument.Statement).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        {
          Effect: 'Allow',
          Principal: { Service: 'logging.s3.amazonaws.com' },
          Action: 's3:PutObject',
          Resource: { 'Fn::Join': ['', [arnOf(logsBucket), '/claims-bucket/*']] },
          Condition: {
            ArnLike: { 'aws:SourceArn': arnOf(claims) },
            StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
          },
        },
      ]),
    );
  });

  it.each([
    { service: 'leaseq-api', timeout: 29 },
    { service: 'leaseq-dispatch', timeout: 60 },
    { service: 'leaseq-sweep', timeout: 60 },
  ])('has the function $service on Node 22 / arm64 with the runtime environment', ({ service, timeout }) => {
    // And the alarm relay (test/infra/alarms.test.ts) and busy-time fan-out's release (below).
    template.resourceCountIs('AWS::Lambda::Function', 5);
    const fn = template.toJSON().Resources[functionId(template, service)];
    expect(fn.Properties).toMatchObject({
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      MemorySize: 512,
      Timeout: timeout,
    });
    const env = fn.Properties.Environment.Variables;
    expect(env.LEASEQ_TABLE).toEqual({ Ref: onlyId(template, 'AWS::DynamoDB::Table') });
    expect(env.LEASEQ_BUCKET).toEqual({ Ref: logicalId(local.tenant.bucket) });
    expect(env.NODE_OPTIONS).toBe('--enable-source-maps');
    expect(env.AWS_REGION).toBeUndefined();
    // The tenant file is bundled, not in the environment (Lambda's holds 4 KB); verbatim, not
    // defaults-expanded: the function applies its own schema's defaults.
    expect(env.LEASEQ_TENANT_CONFIG).toBeUndefined();
    // The alarm owners are the stack's alone.
    expect(JSON.parse(local.tenant.tenantConfig)).toEqual({ ...(localFile as object), alarms: undefined });

    const logGroupId: string = fn.Properties.LoggingConfig.LogGroup.Ref;
    expect(template.toJSON().Resources[logGroupId].Properties.RetentionInDays).toBe(30);
  });

  it('routes the HTTP API (payload v2) to the function, throttled and access-logged', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
    const fnId = functionId(template, 'leaseq-api');
    template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
      IntegrationType: 'AWS_PROXY',
      IntegrationUri: { 'Fn::GetAtt': [fnId, 'Arn'] },
      PayloadFormatVersion: '2.0',
    });
    const httpApi = Object.keys(
      template.findResources('AWS::ApiGatewayV2::Api', { Properties: { ProtocolType: 'HTTP' } }),
    )[0];
    const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route'))
      .filter((r) => r.Properties.ApiId.Ref === httpApi)
      .map((r) => r.Properties.RouteKey);
    expect(routes.sort()).toEqual([
      'ANY /queues/jobs/{proxy+}',
      'ANY /queues/ledger/{proxy+}',
      'ANY /{proxy+}',
      'GET /health',
      'POST /',
      'POST /queues/jobs/messages',
      'POST /queues/ledger/messages',
    ]);
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingBurstLimit: 1000, ThrottlingRateLimit: 500 },
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('requestId') },
    });
  });

  it("throttles each queue's routes apart, at twice a declared quota, after the routes exist", () => {
    const { stack } = buildApp(
      owned({
        tenant: 'quota',
        queues: {
          noisy: { rate_limits: { produce: { requests_per_sec: 20 }, consume: { requests_per_sec: 5 } } },
          quiet: {},
        },
      }),
      { functionCode },
    );
    const t = Template.fromStack(stack);
    const [stageId, stage] =
      Object.entries(
        t.findResources('AWS::ApiGatewayV2::Stage', { Properties: { StageName: '$default' } }),
      )[0] ?? [];
    expect(stage?.Properties.RouteSettings).toEqual({
      'POST /queues/noisy/messages': { ThrottlingRateLimit: 40, ThrottlingBurstLimit: 40 },
      'ANY /queues/noisy/{proxy+}': { ThrottlingRateLimit: 10, ThrottlingBurstLimit: 10 },
      'POST /queues/quiet/messages': { ThrottlingRateLimit: 500, ThrottlingBurstLimit: 1000 },
      'ANY /queues/quiet/{proxy+}': { ThrottlingRateLimit: 500, ThrottlingBurstLimit: 1000 },
    });
    // CloudFormation refuses route settings naming a route it has not made yet.
    const routeIds = Object.entries(t.findResources('AWS::ApiGatewayV2::Route'))
      .filter(([, r]) => r.Properties.RouteKey.includes('/queues/'))
      .map(([id]) => id);
    expect(routeIds).toHaveLength(4);
    expect(stage?.DependsOn).toEqual(expect.arrayContaining(routeIds));
    expect(stageId).toBeDefined();
  });

  it("warns at synth when the queues' routes together pass the account's API Gateway throttle", () => {
    const queues = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`q${i}`, {}]));
    const { stack } = buildApp(owned({ tenant: 'many', queues }), { functionCode });
    const warnings = Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('Throttle rate'));
    expect(warnings.map((w) => w.entry.data)).toEqual([
      expect.stringMatching(
        /^the queues' routes allow 21500 requests a second together, past API Gateway's 10000/,
      ),
    ]);
  });

  it('grants the api function only its own table, claims, streams and secrets key', () => {
    const tableArn = arnOf(onlyId(template, 'AWS::DynamoDB::Table'));
    const bucketArn = arnOf(logicalId(local.tenant.bucket));
    const streamArns = Object.values(streamIds(template)).map(arnOf);
    const apiId = functionId(template, 'leaseq-api');
    const statements = functionStatements(template, apiId);

    expect(statements.every((s) => s.Effect === 'Allow')).toBe(true);

    const dynamo = serviceStatements(statements, 'dynamodb:');
    expect(actionsOf(dynamo)).toEqual(TABLE_ITEM_ACTIONS);
    expect(resourcesOf(dynamo)).toEqual([tableArn, { 'Fn::Join': ['', [tableArn, '/index/gsi1']] }]);

    // GetObject: receive restores claim-checked payloads and reads the lease layer's segments.
    const s3 = serviceStatements(statements, 's3:');
    expect(actionsOf(s3)).toEqual(new Set(['s3:PutObject', 's3:GetObject']));
    expect(resourcesOf(s3)).toEqual([
      { 'Fn::Join': ['', [bucketArn, '/claims/*']] },
      { 'Fn::Join': ['', [bucketArn, '/segments/*']] },
    ]);

    const kinesis = serviceStatements(statements, 'kinesis:');
    expect(actionsOf(kinesis)).toEqual(PRODUCE_ACTIONS);
    expect(resourcesOf(kinesis)).toHaveLength(streamArns.length);
    expect(resourcesOf(kinesis)).toEqual(expect.arrayContaining(streamArns));

    // Seals and opens SQS credentials' secrets with the stack's key, and does nothing else with it.
    const kms = serviceStatements(statements, 'kms:');
    expect(actionsOf(kms)).toEqual(new Set(['kms:Encrypt', 'kms:Decrypt']));
    expect(resourcesOf(kms)).toEqual([arnOf(logicalId(local.tenant.secretsKey as kms.Key))]);

    // Nothing else: every statement is one of the four services above, or its own logs.
    // Wakes the receivers waiting on the channel when its fast path admits.
    const wake = expectWakeGrant(template, statements);
    const logs = expectOwnLogs(template, apiId, statements);
    expect(dynamo.length + s3.length + kinesis.length + kms.length + wake.length + logs.length).toBe(
      statements.length,
    );
  });

  it('has one rotated KMS key, for the SQS credentials it asks for, which only the api function may use', () => {
    const keyId = logicalId(local.tenant.secretsKey as kms.Key);
    template.resourceCountIs('AWS::KMS::Key', 1);
    template.hasResource('AWS::KMS::Key', {
      Properties: {
        EnableKeyRotation: true,
        PendingWindowInDays: 7,
        Description: 'leaseq-local: seals the secrets of SQS credentials',
      },
      DeletionPolicy: 'Delete',
    });
    const apiId = functionId(template, 'leaseq-api');
    for (const [id, fn] of Object.entries(template.findResources('AWS::Lambda::Function'))) {
      const env = fn.Properties.Environment.Variables;
      if (id === apiId) expect(env.LEASEQ_SECRETS_KEY_ID).toEqual(arnOf(keyId));
      else expect(env.LEASEQ_SECRETS_KEY_ID).toBeUndefined();
    }
    for (const service of ['leaseq-dispatch', 'leaseq-sweep'])
      expect(serviceStatements(functionStatements(template, functionId(template, service)), 'kms:')).toEqual(
        [],
      );
    // Its key policy is CDK's default: the account's IAM decides, and only the api's grant says yes.
    const key = template.toJSON().Resources[keyId];
    expect(key.Properties.KeyPolicy.Statement).toEqual([
      expect.objectContaining({
        Effect: 'Allow',
        Principal: { AWS: expect.anything() },
        Action: 'kms:*',
        Resource: '*',
      }),
    ]);
  });

  it('has no KMS key for a tenant file that does not ask for SQS credentials: $1 a month saved', () => {
    const { sqs_credentials: _, ...file } = localFile as { sqs_credentials?: boolean };
    const { stack } = buildApp(file, { functionCode });
    const plain = Template.fromStack(stack);
    plain.resourceCountIs('AWS::KMS::Key', 0);
    expect(stack.tenant.secretsKey).toBeUndefined();
    for (const fn of Object.values(plain.findResources('AWS::Lambda::Function')))
      expect(fn.Properties.Environment.Variables.LEASEQ_SECRETS_KEY_ID).toBeUndefined();
    // The alarm topic uses SNS's own key, which bills nothing.
    const [topic] = Object.values(plain.findResources('AWS::SNS::Topic'));
    expect(JSON.stringify(topic?.Properties.KmsMasterKeyId)).toMatch(/:alias\/aws\/sns"/);
  });

  it('subscribes dispatch to every queue stream: oldest first, one batch per shard, never skipping', () => {
    const dispatchId = functionId(template, 'leaseq-dispatch');
    const sweepId = functionId(template, 'leaseq-sweep');
    // Every mapping but the sweep's wake-up (its own test).
    const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'))
      .map((r) => r.Properties)
      .filter((m) => m.FunctionName.Ref !== sweepId);
    const streamArns = Object.values(streamIds(template)).map(arnOf);
    expect(mappings.map((m) => m.EventSourceArn)).toHaveLength(streamArns.length);
    expect(mappings.map((m) => m.EventSourceArn)).toEqual(expect.arrayContaining(streamArns));
    for (const m of mappings) {
      expect(m).toMatchObject({
        FunctionName: { Ref: dispatchId },
        StartingPosition: 'TRIM_HORIZON',
        BatchSize: 100,
        MaximumBatchingWindowInSeconds: 0,
        ParallelizationFactor: 1,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        // -1: retried until the records expire, so a full window keeps the backlog in the stream.
        MaximumRetryAttempts: -1,
      });
      expect([undefined, false]).toContain(m.BisectBatchOnFunctionError);
      expect([undefined, -1]).toContain(m.MaximumRecordAgeInSeconds);
      expect(m.DestinationConfig).toBeUndefined();
    }
  });

  it('grants dispatch table items, reads of its own streams (nothing to write to them), and segment writes', () => {
    const streamArns = Object.values(streamIds(template)).map(arnOf);
    const dispatchId = functionId(template, 'leaseq-dispatch');
    const statements = statementsBesideBusy(template, dispatchId);

    const dynamo = serviceStatements(statements, 'dynamodb:');
    expect(actionsOf(dynamo)).toEqual(TABLE_ITEM_ACTIONS);

    const kinesis = serviceStatements(statements, 'kinesis:');
    expect(actionsOf(kinesis)).toEqual(CONSUME_ACTIONS);
    expect(resourcesOf(kinesis)).toHaveLength(streamArns.length);
    expect(resourcesOf(kinesis)).toEqual(expect.arrayContaining(streamArns));

    // PutObject: the lease layer's large segments, and nothing else of the bucket.
    const s3 = serviceStatements(statements, 's3:');
    expect(actionsOf(s3)).toEqual(new Set(['s3:PutObject']));
    expect(resourcesOf(s3)).toEqual([
      { 'Fn::Join': ['', [arnOf(logicalId(local.tenant.bucket)), '/segments/*']] },
    ]);

    const wake = expectWakeGrant(template, statements);
    const logs = expectOwnLogs(template, dispatchId, statements);
    expect(dynamo.length + kinesis.length + s3.length + wake.length + logs.length).toBe(statements.length);
  });

  it('wakes sweep on the writes of its arm, filtered out of the table stream', () => {
    const sweepId = functionId(template, 'leaseq-sweep');
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: sweepId },
      EventSourceArn: { 'Fn::GetAtt': [onlyId(template, 'AWS::DynamoDB::Table'), 'StreamArn'] },
      StartingPosition: 'LATEST',
      MaximumRetryAttempts: 2,
      MaximumRecordAgeInSeconds: 60,
      FilterCriteria: {
        Filters: [{ Pattern: JSON.stringify({ dynamodb: { Keys: { pk: { S: ['TENANT#SWEEP'] } } } }) }],
      },
    });
  });

  it('fires sweep every minute, one instance at a time, and drops a tick rather than queue it', () => {
    const sweepId = functionId(template, 'leaseq-sweep');
    expect(template.toJSON().Resources[sweepId].Properties.ReservedConcurrentExecutions).toBe(1);
    template.resourceCountIs('AWS::Events::Rule', 1);
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [{ Arn: arnOf(sweepId), Id: Match.anyValue(), RetryPolicy: { MaximumRetryAttempts: 0 } }],
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      FunctionName: arnOf(sweepId),
      Principal: 'events.amazonaws.com',
      SourceArn: arnOf(onlyId(template, 'AWS::Events::Rule')),
    });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: sweepId },
      MaximumEventAgeInSeconds: 60,
      MaximumRetryAttempts: 0,
    });
  });

  it('grants sweep table items, appends to its own streams, and segment reads only of S3', () => {
    const streamArns = Object.values(streamIds(template)).map(arnOf);
    const sweepId = functionId(template, 'leaseq-sweep');
    const statements = statementsBesideBusy(template, sweepId);

    const dynamo = serviceStatements(statements, 'dynamodb:');
    const streamRead = dynamo.filter((s) => JSON.stringify(s.Resource).includes('StreamArn'));
    // Its drift check reads the table's own settings back, and nothing else of the table's control plane.
    const describe = dynamo.filter((s) => actionsOf([s]).has('dynamodb:DescribeTable'));
    expect(actionsOf(describe)).toEqual(
      new Set(['dynamodb:DescribeTable', 'dynamodb:DescribeContinuousBackups']),
    );
    expect(actionsOf(dynamo.filter((s) => !streamRead.includes(s) && !describe.includes(s)))).toEqual(
      TABLE_ITEM_ACTIONS,
    );
    // Its wake-up's stream, which Lambda reads for it.
    expect(actionsOf(streamRead)).toEqual(
      new Set([
        'dynamodb:DescribeStream',
        'dynamodb:GetRecords',
        'dynamodb:GetShardIterator',
        'dynamodb:ListStreams',
      ]),
    );

    const kinesis = serviceStatements(statements, 'kinesis:');
    expect(actionsOf(kinesis)).toEqual(PRODUCE_ACTIONS);
    expect(resourcesOf(kinesis)).toHaveLength(streamArns.length);
    expect(resourcesOf(kinesis)).toEqual(expect.arrayContaining(streamArns));

    // GetObject of segments: an expired lease's message is read from its segment.
    const s3 = serviceStatements(statements, 's3:');
    expect(actionsOf(s3)).toEqual(new Set(['s3:GetObject']));
    expect(resourcesOf(s3)).toEqual([
      { 'Fn::Join': ['', [arnOf(logicalId(local.tenant.bucket)), '/segments/*']] },
    ]);
    const wake = expectWakeGrant(template, statements);
    const logs = expectOwnLogs(template, sweepId, statements);
    // It tells the alarm topic of the queues' alarms.
    const sns = serviceStatements(statements, 'sns:');
    expect(sns).toEqual([
      expect.objectContaining({
        Action: 'sns:Publish',
        Resource: { Ref: logicalId(local.tenant.alarms.topic) },
      }),
    ]);
    expect(dynamo.length + kinesis.length + s3.length + wake.length + logs.length + sns.length).toBe(
      statements.length,
    );
  });

  it('scopes every data action of every policy to a resource, never "*"', () => {
    for (const t of [template, acmeTemplate]) {
      const statements = Object.values(t.findResources('AWS::IAM::Policy')).flatMap(
        (p) => p.Properties.PolicyDocument.Statement as Statement[],
      );
      expect(statements.length).toBeGreaterThan(0);
      for (const s of statements) {
        if (asList(s.Action).some((a) => /^(dynamodb|kinesis|s3):/.test(a))) {
          expect(asList(s.Resource)).not.toContain('*');
        }
      }
    }
  });

  it('has a wake channel: a WebSocket API routed to the api function, its endpoint in every admitting function', () => {
    const channel = Object.keys(
      template.findResources('AWS::ApiGatewayV2::Api', { Properties: { ProtocolType: 'WEBSOCKET' } }),
    );
    expect(channel).toHaveLength(1);
    const channelId = channel[0] as string;
    const apiFn = functionId(template, 'leaseq-api');
    const integrations = template.findResources('AWS::ApiGatewayV2::Integration', {
      Properties: { ApiId: { Ref: channelId } },
    });
    const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route'))
      .filter((r) => r.Properties.ApiId.Ref === channelId)
      .map((r) => {
        const integration = integrations[r.Properties.Target['Fn::Join'][1][1].Ref];
        expect(JSON.stringify(integration?.Properties.IntegrationUri)).toContain(apiFn);
        return `${r.Properties.RouteKey} ${r.Properties.RouteResponseSelectionExpression ?? '-'}`;
      });
    // $default answers on the connection (hello, pong): a route response.
    expect(routes.sort()).toEqual(['$connect -', '$default $default', '$disconnect -']);
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      ApiId: { Ref: channelId },
      StageName: 'live',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingBurstLimit: 200, ThrottlingRateLimit: 100 },
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('connectionId') },
    });
    for (const service of ['leaseq-api', 'leaseq-dispatch', 'leaseq-sweep']) {
      const env = template.toJSON().Resources[functionId(template, service)].Properties.Environment.Variables;
      expect(JSON.stringify(env.LEASEQ_CHANNEL_ENDPOINT)).toContain(channelId);
    }
    expect(JSON.stringify(template.toJSON().Outputs.ChannelUrl.Value)).toContain('wss://');
  });

  it('outputs the API URL, table, bucket, function names and each stream name', () => {
    const outputs = template.toJSON().Outputs;
    expect(Object.keys(outputs)).toEqual(expect.arrayContaining(['ApiUrl', 'TableName', 'BucketName']));
    expect(outputs.DispatchFunctionName.Value).toEqual({ Ref: functionId(template, 'leaseq-dispatch') });
    expect(outputs.SweepFunctionName.Value).toEqual({ Ref: functionId(template, 'leaseq-sweep') });
    const streamOutputs = Object.values(outputs).map((o) => (o as { Value: unknown }).Value);
    for (const id of Object.values(streamIds(template))) expect(streamOutputs).toContainEqual({ Ref: id });
  });
});

describe('TenantStack for another tenant', () => {
  it('names every resource after the tenant', () => {
    expect(acme.stackName).toBe('Leaseq-acme');
    acmeTemplate.resourceCountIs('AWS::Kinesis::Stream', 1);
    acmeTemplate.hasResourceProperties('AWS::Kinesis::Stream', {
      Name: 'leaseq-acme-orders',
      ShardCount: 3,
      RetentionPeriodHours: 72,
    });
    acmeTemplate.hasResourceProperties('AWS::DynamoDB::Table', { TableName: 'leaseq-acme' });
    acmeTemplate.hasResourceProperties('AWS::S3::Bucket', {
      // 200 hours is 8⅓ days: rounded up so a claim never expires before its DLQ copy.
      LifecycleConfiguration: {
        Rules: Match.arrayWith([Match.objectLike({ Prefix: 'claims/orders/', ExpirationInDays: 9 })]),
      },
    });
  });

  it("keeps a queue's own stream under the logical id it had before queues could share one", () => {
    // A new logical id would make CloudFormation replace the stream, and its records with it.
    expect(Object.keys(acmeTemplate.findResources('AWS::Kinesis::Stream'))).toEqual([
      'QueueordersStreamDFA212E6',
    ]);
  });

  it.each(['leaseq-api', 'leaseq-dispatch', 'leaseq-sweep'])('grants %s only its own stream', (service) => {
    const [streamId] = Object.values(streamIds(acmeTemplate));
    const statements = statementsBesideBusy(acmeTemplate, functionId(acmeTemplate, service));
    expect(resourcesOf(serviceStatements(statements, 'kinesis:'))).toEqual([arnOf(streamId as string)]);
  });

  it('subscribes dispatch to its one stream only', () => {
    const [streamId] = Object.values(streamIds(acmeTemplate));
    // Dispatch's, and the sweep's wake-up.
    acmeTemplate.resourceCountIs('AWS::Lambda::EventSourceMapping', 2);
    acmeTemplate.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: arnOf(streamId as string),
      FunctionName: { Ref: functionId(acmeTemplate, 'leaseq-dispatch') },
    });
  });
});

describe('TenantStack with a stream on enhanced fan-out', () => {
  /** The stream consumer that reads `stream`, as [logical id, resource]. */
  const consumerOf = (stream: string) => {
    const arn = JSON.stringify(arnOf(streamIds(fanTemplate)[stream] as string));
    const found = Object.entries(fanTemplate.findResources('AWS::Kinesis::StreamConsumer')).find(
      ([, r]) => JSON.stringify(r.Properties.StreamARN) === arn,
    );
    if (!found) throw new Error(`no stream consumer of ${stream}`);
    return found;
  };

  it("subscribes dispatch to that stream through a consumer of its own, and to the other stream's shards", () => {
    const dispatch = functionId(fanTemplate, 'leaseq-dispatch');
    const [consumerId, consumer] = consumerOf('leaseq-fan_fast');
    expect(consumer.Properties.ConsumerName).toMatch(/^[a-zA-Z0-9_.-]+$/);
    const mappings = Object.values(fanTemplate.findResources('AWS::Lambda::EventSourceMapping'))
      .map((r) => r.Properties)
      .filter((p) => JSON.stringify(p.FunctionName) === JSON.stringify({ Ref: dispatch }));
    expect(mappings.map((m) => m.EventSourceArn)).toEqual(
      expect.arrayContaining([
        { 'Fn::GetAtt': [consumerId, 'ConsumerARN'] },
        arnOf(streamIds(fanTemplate)['leaseq-fan_shared'] as string),
      ]),
    );
    expect(mappings).toHaveLength(2);
  });

  it('gives a Lambda consumer of a queue on fan-out a stream consumer of its own', () => {
    // Dispatch's of the shared stream, and the Lambda consumer's of its queue's own.
    fanTemplate.resourceCountIs('AWS::Kinesis::StreamConsumer', 2);
    const [consumerId, consumer] = consumerOf('leaseq-fan-events');
    expect(consumer.Properties.ConsumerName).toMatch(/^[a-zA-Z0-9_.-]+$/);
    fanTemplate.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [consumerId, 'ConsumerARN'] },
      FunctionName: { Ref: functionId(fanTemplate, 'leaseq-consumer-events-billing') },
    });
  });

  it('refuses more Lambda consumers on fan-out than Kinesis registers on a stream (20)', () => {
    const consumers = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ name: `c${i}`, entry: 'examples/lambda-consumer.ts' }));
    const file = (n: number) =>
      owned({ tenant: 'many', queues: { events: { fan_out: true, consumers: consumers(n) } } });
    expect(() => buildApp(file(21), { functionCode })).toThrow(/at most 20 fan-out consumers a stream/);
  });

  it('lets dispatch subscribe through its consumer, and nothing else through it', () => {
    const [consumerId] = consumerOf('leaseq-fan_fast');
    // The tenant's own stream (`slow`) switches busy-time fan-out: its grant names no consumer of fan_fast.
    const subscribing = (service: string) =>
      functionStatements(fanTemplate, functionId(fanTemplate, service)).filter(
        (s) =>
          [s.Action].flat().includes('kinesis:SubscribeToShard') &&
          !JSON.stringify(s.Resource).includes('/consumer/*'),
      );
    expect(resourcesOf(subscribing('leaseq-dispatch'))).toEqual([
      { 'Fn::GetAtt': [consumerId, 'ConsumerARN'] },
    ]);
    expect(subscribing('leaseq-api')).toEqual([]);
    expect(subscribing('leaseq-sweep')).toEqual([]);
  });
});

describe('TenantStack with busy-time fan-out (the default)', () => {
  const sweepId = () => functionId(template, 'leaseq-sweep');
  const releaseId = () => functionId(template, 'leaseq-fan-out-release');
  const dispatchId = () => functionId(template, 'leaseq-dispatch');
  const consumersOf = (streamId: string) => ({ 'Fn::Join': ['', [arnOf(streamId), '/consumer/*']] });

  it("lets the sweep and the release switch its stream's consumer and dispatch's mapping on it, and dispatch be pushed through it", () => {
    const [streamId] = Object.values(streamIds(template)) as [string];
    const onDispatch = { StringEquals: { 'lambda:FunctionArn': arnOf(dispatchId()) } };
    for (const id of [sweepId(), releaseId()]) {
      const busy = functionStatements(template, id).filter(isBusyGrant);
      expect(busy).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            Action: [
              'kinesis:DescribeStreamSummary',
              'kinesis:RegisterStreamConsumer',
              'kinesis:DescribeStreamConsumer',
              'kinesis:DeregisterStreamConsumer',
            ],
            Resource: [arnOf(streamId), consumersOf(streamId)],
          }),
          expect.objectContaining({
            Action: 'lambda:CreateEventSourceMapping',
            Resource: '*',
            Condition: onDispatch,
          }),
          expect.objectContaining({ Action: 'lambda:ListEventSourceMappings', Resource: '*' }),
          expect.objectContaining({ Action: 'lambda:DeleteEventSourceMapping', Condition: onDispatch }),
        ]),
      );
      expect(busy).toHaveLength(4);
    }
    expect(functionStatements(template, dispatchId()).filter(isBusyGrant)).toEqual([
      expect.objectContaining({
        Action: ['kinesis:SubscribeToShard', 'kinesis:DescribeStreamConsumer'],
        Resource: consumersOf(streamId),
      }),
    ]);
    expect(functionStatements(template, functionId(template, 'leaseq-api')).filter(isBusyGrant)).toEqual([]);
    const resources = template.toJSON().Resources;
    for (const id of [sweepId(), releaseId()])
      expect(resources[id].Properties.Environment.Variables.LEASEQ_DISPATCH_FUNCTION).toEqual({
        Ref: dispatchId(),
      });
    // The release function does nothing else.
    expect(functionStatements(template, releaseId()).filter((s) => !isBusyGrant(s))).toEqual([
      expect.objectContaining({ Action: ['logs:CreateLogStream', 'logs:PutLogEvents'] }),
    ]);
  });

  it('has the release answer for them before a stream or dispatch is deleted, once nothing fires the sweep', () => {
    const resourceId = onlyId(template, 'Custom::LeaseqBusyFanOut');
    const resources = template.toJSON().Resources;
    expect(resources[resourceId].Properties).toEqual({
      ServiceToken: arnOf(releaseId()),
      Streams: ['leaseq-local_shared'],
    });
    expect(resources[resourceId].DependsOn).toEqual(
      expect.arrayContaining([...Object.values(streamIds(template)), dispatchId()]),
    );
    const firing = [onlyId(template, 'AWS::Events::Rule')];
    for (const [id, r] of Object.entries(template.findResources('AWS::Lambda::EventSourceMapping')))
      if (r.Properties.FunctionName.Ref === sweepId()) firing.push(id);
    expect(firing).toHaveLength(2);
    for (const id of firing) expect(resources[id].DependsOn).toContain(resourceId);
  });

  it('is not in a stack whose streams all have fan_out true or false', () => {
    pinned.resourceCountIs('Custom::LeaseqBusyFanOut', 0);
    const sweep = pinned.toJSON().Resources[functionId(pinned, 'leaseq-sweep')];
    expect(sweep.Properties.Environment.Variables.LEASEQ_DISPATCH_FUNCTION).toBeUndefined();
    expect(functionStatements(pinned, functionId(pinned, 'leaseq-sweep')).filter(isBusyGrant)).toEqual([]);
    expect(
      Object.values(pinned.findResources('AWS::Lambda::Function')).filter(
        (r) => r.Properties.Environment.Variables.POWERTOOLS_SERVICE_NAME === 'leaseq-fan-out-release',
      ),
    ).toEqual([]);
  });
});

describe('buildApp', () => {
  it('rejects an invalid tenant file with the path of the problem', () => {
    expect(() => buildApp({ tenant: 'bad', queues: { jobs: { shards: 0 } } })).toThrow(ConfigError);
    expect(() => buildApp({ tenant: 'bad', queues: { jobs: { shards: 0 } } })).toThrow(
      /queues\.jobs\.shards/,
    );
  });

  it('rejects a file that declares another tenant than the one asked for', () => {
    expect(() => buildApp(acmeFile, { tenant: 'local' })).toThrow(/declares tenant "acme", not "local"/);
  });
});

describe('TenantStack with a Lambda consumer', () => {
  const streams = () => streamIds(pushTemplate);
  const consumerId = () => functionId(pushTemplate, 'leaseq-consumer-events-billing');

  it('bundles the consumer from its entry with its settings and its name in the environment', () => {
    const fn = pushTemplate.toJSON().Resources[consumerId()];
    expect(fn.Properties).toMatchObject({
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Handler: 'index.main',
      MemorySize: 1024,
      Timeout: 120,
    });
    const env = fn.Properties.Environment.Variables;
    expect(env.LEASEQ_CONSUMER_NAME).toBe('billing');
    expect(env.LEASEQ_TABLE).toEqual({ Ref: onlyId(pushTemplate, 'AWS::DynamoDB::Table') });
    expect(env.LEASEQ_TENANT_CONFIG).toBeUndefined();
    expect(JSON.parse(push.tenant.tenantConfig)).toEqual({ ...owned(pushFile), alarms: undefined });
  });

  it("subscribes it to its queue's stream with partial batch responses, and dispatch to the other stream only", () => {
    const mappings = Object.values(pushTemplate.findResources('AWS::Lambda::EventSourceMapping')).map(
      (r) => r.Properties,
    );
    // The consumer's, dispatch's and the sweep's wake-up.
    expect(mappings).toHaveLength(3);
    expect(mappings).toContainEqual(
      expect.objectContaining({
        FunctionName: { Ref: consumerId() },
        EventSourceArn: arnOf(streams()['leaseq-push-events'] as string),
        StartingPosition: 'TRIM_HORIZON',
        BatchSize: 50,
        MaximumBatchingWindowInSeconds: 2,
        ParallelizationFactor: 1,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        MaximumRetryAttempts: -1,
      }),
    );
    const dispatch = mappings.filter(
      (m) => m.FunctionName.Ref === functionId(pushTemplate, 'leaseq-dispatch'),
    );
    expect(dispatch.map((m) => m.EventSourceArn)).toEqual([arnOf(streams()['leaseq-push-jobs'] as string)]);
  });

  it('grants it table items, claim reads of its queue, its segments and reads of its stream: no PutRecords', () => {
    const statements = functionStatements(pushTemplate, consumerId());
    const dynamo = serviceStatements(statements, 'dynamodb:');
    expect(actionsOf(dynamo)).toEqual(TABLE_ITEM_ACTIONS);
    const s3 = serviceStatements(statements, 's3:');
    expect(actionsOf(s3)).toEqual(new Set(['s3:GetObject', 's3:PutObject']));
    const bucketArn = arnOf(logicalId(push.tenant.bucket));
    expect(resourcesOf(s3)).toEqual([
      { 'Fn::Join': ['', [bucketArn, '/claims/events/*']] },
      { 'Fn::Join': ['', [bucketArn, '/segments/*']] },
    ]);
    // Writes only where segments go: claim-checked payloads stay read-only for a consumer.
    const writes = s3.filter((st) => actionsOf([st]).has('s3:PutObject'));
    expect(resourcesOf(writes)).toEqual([{ 'Fn::Join': ['', [bucketArn, '/segments/*']] }]);
    const kinesis = serviceStatements(statements, 'kinesis:');
    expect(actionsOf(kinesis)).toEqual(CONSUME_ACTIONS);
    expect(resourcesOf(kinesis)).toEqual([arnOf(streams()['leaseq-push-events'] as string)]);
    const logs = expectOwnLogs(pushTemplate, consumerId(), statements);
    expect(dynamo.length + s3.length + kinesis.length + logs.length).toBe(statements.length);
  });
});
