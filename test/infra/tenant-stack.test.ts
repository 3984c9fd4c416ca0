import { readFileSync } from 'node:fs';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../functions/core/config.js';
import { buildApp } from '../../infra/build-app.js';

// Inline code instead of the esbuild bundle: these tests are about the template, not the handler.
const functionCode = lambda.Code.fromInline('export const handler = async () => ({ statusCode: 200 });');

const localFile: unknown = JSON.parse(
  readFileSync(new URL('../../tenants/local.json', import.meta.url), 'utf8'),
);
const acmeFile = {
  tenant: 'acme',
  queues: { orders: { ordered: true, shards: 3, retention_hours: 72, dlq_retention_hours: 200 } },
};

// One app for the file: each stack is synthesized once and every test reads its template.
const { app, stack: local } = buildApp(localFile, { functionCode });
const { stack: acme } = buildApp(acmeFile, { app, functionCode });
const template = Template.fromStack(local);
const acmeTemplate = Template.fromStack(acme);

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

function onlyId(t: Template, type: string): string {
  const ids = Object.keys(t.findResources(type));
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

  it('has one KMS-encrypted stream per queue, sized by the tenant file', () => {
    template.resourceCountIs('AWS::Kinesis::Stream', 2);
    for (const queue of ['jobs', 'ledger']) {
      template.hasResourceProperties('AWS::Kinesis::Stream', {
        Name: `leaseq-local-${queue}`,
        ShardCount: 2,
        RetentionPeriodHours: 96,
        StreamEncryption: { EncryptionType: 'KMS', KeyId: 'alias/aws/kinesis' },
      });
    }
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
        ],
        BillingMode: 'PAY_PER_REQUEST',
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      },
    });
  });

  it('has a private, encrypted, TLS-only bucket that keeps claims as long as the DLQ', () => {
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

  it('has the api function on Node 22 / arm64 with the runtime environment', () => {
    const fnId = onlyId(template, 'AWS::Lambda::Function');
    const fn = template.toJSON().Resources[fnId];
    expect(fn.Properties).toMatchObject({
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      MemorySize: 512,
      Timeout: 29,
    });
    const env = fn.Properties.Environment.Variables;
    expect(env.LEASEQ_TABLE).toEqual({ Ref: onlyId(template, 'AWS::DynamoDB::Table') });
    expect(env.LEASEQ_BUCKET).toEqual({ Ref: onlyId(template, 'AWS::S3::Bucket') });
    expect(env.NODE_OPTIONS).toBe('--enable-source-maps');
    expect(env.POWERTOOLS_SERVICE_NAME).toBe('leaseq-api');
    expect(env.AWS_REGION).toBeUndefined();
    // Verbatim, not defaults-expanded: the function applies its own schema's defaults.
    expect(JSON.parse(env.LEASEQ_TENANT_CONFIG)).toEqual(localFile);

    const logGroupId: string = fn.Properties.LoggingConfig.LogGroup.Ref;
    expect(template.toJSON().Resources[logGroupId].Properties.RetentionInDays).toBe(30);
  });

  it('routes the HTTP API (payload v2) to the function, throttled and access-logged', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
    const fnId = onlyId(template, 'AWS::Lambda::Function');
    template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
      IntegrationType: 'AWS_PROXY',
      IntegrationUri: { 'Fn::GetAtt': [fnId, 'Arn'] },
      PayloadFormatVersion: '2.0',
    });
    const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route')).map(
      (r) => r.Properties.RouteKey,
    );
    expect(routes.sort()).toEqual(['ANY /{proxy+}', 'GET /health']);
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingBurstLimit: 1000, ThrottlingRateLimit: 500 },
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('requestId') },
    });
  });

  it('grants the api function only its own table, claims and streams', () => {
    const tableArn = { 'Fn::GetAtt': [onlyId(template, 'AWS::DynamoDB::Table'), 'Arn'] };
    const bucketArn = { 'Fn::GetAtt': [onlyId(template, 'AWS::S3::Bucket'), 'Arn'] };
    const streams = streamIds(template);
    const statements = functionStatements(template, onlyId(template, 'AWS::Lambda::Function'));

    const byService = (prefix: string) => statements.filter((s) => asList(s.Action)[0]?.startsWith(prefix));
    const resourcesOf = (ss: Statement[]) => ss.flatMap((s) => asList(s.Resource));
    const actionsOf = (ss: Statement[]) => new Set(ss.flatMap((s) => asList(s.Action)));

    expect(statements.every((s) => s.Effect === 'Allow')).toBe(true);
    for (const s of statements) expect(asList(s.Resource)).not.toContain('*');

    const dynamo = byService('dynamodb:');
    expect(actionsOf(dynamo)).toEqual(
      new Set([
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
        'dynamodb:DeleteItem',
        'dynamodb:BatchGetItem',
        'dynamodb:BatchWriteItem',
        'dynamodb:Query',
        'dynamodb:ConditionCheckItem',
      ]),
    );
    expect(resourcesOf(dynamo)).toEqual([tableArn, { 'Fn::Join': ['', [tableArn, '/index/*']] }]);

    const s3 = byService('s3:');
    expect(actionsOf(s3)).toEqual(new Set(['s3:PutObject', 's3:GetObject']));
    expect(resourcesOf(s3)).toEqual([{ 'Fn::Join': ['', [bucketArn, '/claims/*']] }]);

    const kinesis = byService('kinesis:');
    expect(actionsOf(kinesis)).toEqual(
      new Set([
        'kinesis:PutRecords',
        'kinesis:PutRecord',
        'kinesis:DescribeStreamSummary',
        'kinesis:ListShards',
      ]),
    );
    expect(resourcesOf(kinesis)).toEqual(
      expect.arrayContaining(Object.values(streams).map((id) => ({ 'Fn::GetAtt': [id, 'Arn'] }))),
    );
    expect(resourcesOf(kinesis)).toHaveLength(2);

    // Nothing else: every statement is one of the three services above.
    expect(dynamo.length + s3.length + kinesis.length).toBe(statements.length);
  });

  it('outputs the API URL, table, bucket and each stream name', () => {
    const outputs = template.toJSON().Outputs;
    expect(Object.keys(outputs)).toEqual(expect.arrayContaining(['ApiUrl', 'TableName', 'BucketName']));
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

  it('grants its function only its own stream', () => {
    const [streamId] = Object.values(streamIds(acmeTemplate));
    const statements = functionStatements(acmeTemplate, onlyId(acmeTemplate, 'AWS::Lambda::Function'));
    const kinesisResources = statements
      .filter((s) => asList(s.Action).some((a) => a.startsWith('kinesis:')))
      .flatMap((s) => asList(s.Resource));
    expect(kinesisResources).toEqual([{ 'Fn::GetAtt': [streamId, 'Arn'] }]);
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
