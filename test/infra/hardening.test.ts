import { readdirSync, readFileSync } from 'node:fs';
import { App, type CfnElement, Stack, Validations } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../infra/build-app.js';
import { owned } from '../helpers/owned.js';

// Stack hardening: cdk-nag, one tenant's policies against another's resources, per-tenant names.

const functionCode = lambda.Code.fromInline('export const handler = async () => ({ statusCode: 200 });');

/** Two queues, one pushed to a Lambda consumer as in tenants/example-push.json. Same names in every tenant. */
const QUEUES = ['orders', 'events'];
const tenantFile = (tenant: string) =>
  owned({
    tenant,
    queues: {
      // On enhanced fan-out, so its stream consumer meets the checks too.
      orders: { shards: 2, fan_out: true },
      events: {
        shards: 1,
        consumers: [{ name: 'log-events', entry: 'examples/lambda-consumer.ts', batch_size: 10 }],
      },
    },
    api_keys: [{ name: 'admin', sha256: 'a'.repeat(64), scopes: ['admin:*'] }],
    sqs_credentials: true,
  });

// Both tenants in one app, as one `cdk synth` would hold them: nothing may tie them together.
const { app, stack: acme } = buildApp(tenantFile('acme'), { functionCode });
const { stack: globex } = buildApp(tenantFile('globex'), { app, functionCode });
const tenants = [
  { tenant: 'acme', other: 'globex', stack: acme, template: Template.fromStack(acme) },
  { tenant: 'globex', other: 'acme', stack: globex, template: Template.fromStack(globex) },
];

const localFile: unknown = JSON.parse(
  readFileSync(new URL('../../tenants/local.json', import.meta.url), 'utf8'),
);
const { stack: local } = buildApp(localFile, { functionCode });

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON, read field by field like Template.toJSON().
type Json = Record<string, any>;
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Principal?: unknown };
const asList = <T>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);

const logicalId = (c: IConstruct) => Stack.of(c).getLogicalId(c.node.defaultChild as CfnElement);

/** AwsSolutions findings under `scope` that are not acknowledged, as `rule → construct paths`. */
function nagFindings(scope: IConstruct): Record<string, string[]> {
  const report = new AwsSolutionsChecks(undefined, { verbose: true }).validateScope(scope);
  return Object.fromEntries(
    report.violations.map((v) => [
      v.ruleName,
      v.violatingResources.map((r) => (r as { constructPath?: string }).constructPath ?? '?'),
    ]),
  );
}

/**
 * What the pack finds under `scope` with every acknowledgement ignored: `rule → construct paths`.
 * `isAcknowledged` is private to cdk-nag's NagPack; should it be renamed, this finds what
 * `nagFindings` finds (nothing) and the test that uses it fails.
 */
function rawFindings(scope: IConstruct): Record<string, string[]> {
  const pack = new AwsSolutionsChecks(undefined, { verbose: true });
  Object.assign(pack, { isAcknowledged: () => false });
  return Object.fromEntries(
    pack
      .validateScope(scope)
      .violations.map((v) => [
        v.ruleName,
        v.violatingResources.map((r) => (r as { constructPath?: string }).constructPath ?? '?'),
      ]),
  );
}

/** Every acknowledgement recorded on a construct under `scope`: path, rule id, reason. */
function acknowledgements(
  scope: IConstruct,
): { path: string; construct: IConstruct; id: string; reason: string }[] {
  return scope.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((m) =>
        Object.entries(m.data as Record<string, string>).map(([id, reason]) => ({
          path: construct.node.path,
          construct,
          id: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );
}

describe('cdk-nag AwsSolutions', () => {
  it.each([
    ['local', local],
    ['acme', acme],
    ['globex', globex],
  ])('leaves no unacknowledged error or warning on Leaseq-%s', (_name, stack) => {
    expect(nagFindings(stack)).toEqual({});
    // cdk-nag v3 reports through CDK's validation plugins, not annotations; the stack carries no
    // CDK warning or error annotation of its own either.
    const annotations = Annotations.fromStack(stack);
    expect(annotations.findError('*', Match.anyValue())).toEqual([]);
    expect(annotations.findWarning('*', Match.anyValue())).toEqual([]);
  });

  it('is registered by buildApp: an unacknowledged finding fails synthesis', () => {
    const { app: probe, stack } = buildApp(tenantFile('probe'), { functionCode });
    new s3.Bucket(stack, 'Unlogged', { enforceSSL: true });
    expect(nagFindings(stack)).toEqual({ 'AwsSolutions-S1': ['Leaseq-probe/Unlogged/Resource'] });
    expect(() => probe.synth()).toThrow(/AwsSolutions-S1/);
  });

  it('acknowledges only these findings, each on the resource it is about, each with its reason', () => {
    const acks = acknowledgements(acme);
    for (const a of acks) {
      // Never on the stack or the app: a blanket acknowledgement would hide new findings.
      expect(Stack.isStack(a.construct)).toBe(false);
      expect(a.reason.length).toBeGreaterThan(150);
    }
    const byRule = (id: string) => acks.filter((a) => a.id === id).map((a) => a.path);
    const fnResources = acme.node
      .findAll()
      .filter((c) => c instanceof lambda.Function)
      .map((c) => `${c.node.path}/Resource`);
    expect(byRule('AwsSolutions-L1').sort()).toEqual(fnResources.sort());
    // api, dispatch, sweep, the alarm relay and the Lambda consumer.
    expect(fnResources).toHaveLength(5);
    expect(byRule('AwsSolutions-APIG4').sort()).toEqual([
      'Leaseq-acme/Default/HttpApi/ANY--queues--events--{proxy+}/Resource',
      'Leaseq-acme/Default/HttpApi/ANY--queues--orders--{proxy+}/Resource',
      'Leaseq-acme/Default/HttpApi/ANY--{proxy+}/Resource',
      'Leaseq-acme/Default/HttpApi/GET--health/Resource',
      'Leaseq-acme/Default/HttpApi/POST--/Resource',
      'Leaseq-acme/Default/HttpApi/POST--queues--events--messages/Resource',
      'Leaseq-acme/Default/HttpApi/POST--queues--orders--messages/Resource',
      'Leaseq-acme/Default/WakeChannel/Api/$connect-Route/Resource',
      'Leaseq-acme/Default/WakeChannel/Api/$default-Route/Resource',
      'Leaseq-acme/Default/WakeChannel/Api/$disconnect-Route/Resource',
    ]);
    const bucket = logicalId(acme.tenant.bucket);
    expect(byRule(`AwsSolutions-IAM5[Resource::<${bucket}.Arn>/claims/*]`)).toEqual([
      'Leaseq-acme/Default/ApiServiceRole/DefaultPolicy',
    ]);
    expect(byRule(`AwsSolutions-IAM5[Resource::<${bucket}.Arn>/claims/events/*]`)).toEqual([
      'Leaseq-acme/Default/Consumer-events~log-eventsServiceRole/DefaultPolicy',
    ]);
    expect(byRule(`AwsSolutions-IAM5[Resource::<${bucket}.Arn>/segments/*]`).sort()).toEqual([
      'Leaseq-acme/Default/ApiServiceRole/DefaultPolicy',
      'Leaseq-acme/Default/Consumer-events~log-eventsServiceRole/DefaultPolicy',
      'Leaseq-acme/Default/DispatchServiceRole/DefaultPolicy',
      'Leaseq-acme/Default/SweepServiceRole/DefaultPolicy',
    ]);
    const channel = logicalId(acme.tenant.channel.api);
    expect(
      byRule(
        `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<${channel}>/live/POST/@connections/*]`,
      ).sort(),
    ).toEqual([
      'Leaseq-acme/Default/ApiServiceRole/DefaultPolicy',
      'Leaseq-acme/Default/DispatchServiceRole/DefaultPolicy',
      'Leaseq-acme/Default/SweepServiceRole/DefaultPolicy',
    ]);
    // Nothing else: no IAM4 (no managed policies), no IAM5 but the claim and segment prefixes and
    // the wake channel's connections.
    expect(acks).toHaveLength(5 + 10 + 2 + 4 + 3);
  });

  it.each([
    ['local', local],
    ['acme', acme],
  ])('acknowledges nothing on Leaseq-%s that the pack would not find there', (_name, stack) => {
    const raw = rawFindings(stack);
    // The fixes hold: no managed policy, no index wildcard, the claims bucket is logged.
    expect(Object.keys(raw).filter((id) => /IAM4|index|S1/.test(id))).toEqual([]);
    for (const ack of acknowledgements(stack)) {
      const paths = raw[ack.id] ?? [];
      expect(
        paths.some((p) => p === ack.path || p.startsWith(`${ack.path}/`)),
        `${ack.id} on ${ack.path}`,
      ).toBe(true);
    }
  });

  it('writes each acknowledgement into the template Metadata of its resource', () => {
    const { template } = tenants[0] as (typeof tenants)[number];
    const suppressed = Object.entries(template.toJSON().Resources as Record<string, Json>).flatMap(
      ([id, r]) =>
        ((r.Metadata?.cdk_nag?.rules_to_suppress ?? []) as { id: string }[]).map(
          (s) => `${r.Type} ${id} ${s.id}`,
        ),
    );
    expect(suppressed.filter((s) => s.includes('AwsSolutions-L1'))).toHaveLength(5);
    expect(suppressed.filter((s) => s.includes('AwsSolutions-APIG4'))).toHaveLength(10);
    expect(suppressed.filter((s) => s.includes('AwsSolutions-IAM5'))).toHaveLength(9);
  });
});

/** The statements of every identity policy of a template: policies, managed policies, inline role policies. */
function identityStatements(t: Template): Statement[] {
  const docs = [
    ...Object.values(t.findResources('AWS::IAM::Policy')).map((p) => p.Properties.PolicyDocument),
    ...Object.values(t.findResources('AWS::IAM::ManagedPolicy')).map((p) => p.Properties.PolicyDocument),
    ...Object.values(t.findResources('AWS::IAM::Role')).flatMap((r) =>
      ((r.Properties.Policies ?? []) as Json[]).map((p) => p.PolicyDocument),
    ),
  ];
  return docs.flatMap((d) => d.Statement as Statement[]);
}

/** The logical id in `{ "Fn::GetAtt": [id, "Arn"] }`, else undefined. */
function arnOfId(value: unknown): string | undefined {
  const att = (value as Json | undefined)?.['Fn::GetAtt'];
  // A table's stream is the table's own.
  if (Array.isArray(att) && ['Arn', 'StreamArn', 'ConsumerARN'].includes(att[1])) return att[0] as string;
  // A topic's Ref is its ARN.
  const ref = (value as Json | undefined)?.Ref;
  return typeof ref === 'string' && !ref.startsWith('AWS::') ? ref : undefined;
}

const SERVICE_RESOURCE: Record<string, string> = {
  dynamodb: 'AWS::DynamoDB::Table',
  kinesis: 'AWS::Kinesis::Stream',
  s3: 'AWS::S3::Bucket',
  logs: 'AWS::Logs::LogGroup',
  kms: 'AWS::KMS::Key',
  sns: 'AWS::SNS::Topic',
  'execute-api': 'AWS::ApiGatewayV2::Api',
};

/**
 * What a statement's resource is, in this template: `{ type, id, suffix }` when it is the ARN of
 * one of the template's own resources (maybe with a path after it); throws on anything else,
 * such as a string ("*", a literal ARN) or a reference to something outside the stack.
 */
function ownResource(t: Template, resource: unknown): { type: string; id: string; suffix: string } {
  const resources = t.toJSON().Resources as Record<string, Json>;
  let id = arnOfId(resource);
  let suffix = '';
  const join = (resource as Json)?.['Fn::Join'];
  if (
    !id &&
    Array.isArray(join) &&
    join[0] === '' &&
    join[1].length === 2 &&
    typeof join[1][1] === 'string'
  ) {
    id = arnOfId(join[1][0]);
    suffix = join[1][1];
  }
  const own = id === undefined ? undefined : resources[id];
  if (!id || !own) throw new Error(`not a resource of this stack: ${JSON.stringify(resource)}`);
  return { type: own.Type, id, suffix };
}

describe('tenant isolation (acme and globex in one app)', () => {
  it.each(tenants)(
    '$tenant: every identity policy statement names only its own resources',
    ({ tenant, stack, template }) => {
      const resources = template.toJSON().Resources as Record<string, Json>;
      const statements = identityStatements(template);
      expect(statements.length).toBeGreaterThan(10);
      const claimsBucket = logicalId(stack.tenant.bucket);
      for (const s of statements) {
        expect(s.Effect).toBe('Allow');
        const actions = asList(s.Action);
        const services = new Set(actions.map((a) => a.split(':')[0] as string));
        // One service per statement, no wildcard actions, and only the services leaseq uses.
        expect(services.size).toBe(1);
        const [service] = [...services] as [string];
        expect(Object.keys(SERVICE_RESOURCE)).toContain(service);
        for (const a of actions) expect(a).not.toContain('*');

        for (const r of asList(s.Resource)) {
          expect(r).not.toBe('*');
          if (service === 'execute-api') {
            // The wake channel's connections on its own stage: arn:…:execute-api:<region>:<account>:<api>/live/POST/@connections/*.
            const parts = (r as Json)['Fn::Join'][1] as unknown[];
            const api = parts.find(
              (p) => typeof p === 'object' && (p as Json).Ref?.startsWith('WakeChannel'),
            );
            expect(resources[(api as Json).Ref]?.Properties).toMatchObject({
              Name: `leaseq-${tenant}-channel`,
              ProtocolType: 'WEBSOCKET',
            });
            expect(parts.at(-1)).toBe('/live/POST/@connections/*');
            expect(parts).toContainEqual({ Ref: 'AWS::AccountId' });
            continue;
          }
          let own = ownResource(template, r);
          // A stream consumer (enhanced fan-out) is checked as the stream it reads.
          if (own.type === 'AWS::Kinesis::StreamConsumer' && service === 'kinesis')
            own = ownResource(template, resources[own.id]?.Properties.StreamARN);
          expect(own.type).toBe(SERVICE_RESOURCE[service]);
          const props = resources[own.id]?.Properties ?? {};
          switch (service) {
            case 'dynamodb':
              expect(props.TableName).toBe(`leaseq-${tenant}`);
              expect(['', '/index/gsi1']).toContain(own.suffix);
              break;
            case 'kinesis':
              expect(QUEUES.map((q) => `leaseq-${tenant}-${q}`)).toContain(props.Name);
              expect(own.suffix).toBe('');
              break;
            case 's3':
              // The bucket's claim and segment prefixes only: never the bucket, never the logs bucket.
              expect(own.id).toBe(claimsBucket);
              expect(['/claims/*', '/segments/*', ...QUEUES.map((q) => `/claims/${q}/*`)]).toContain(
                own.suffix,
              );
              break;
            case 'logs':
              expect(own.suffix).toBe('');
              break;
            case 'kms':
              // The tenant's one key: it seals the SQS credentials and encrypts the alarm topic.
              expect(own.id).toBe(logicalId(stack.tenant.secretsKey as IConstruct));
              expect(own.suffix).toBe('');
              break;
            case 'sns':
              // The sweep tells the alarm topic of the queues' alarms.
              expect(own.id).toBe(logicalId(stack.tenant.alarms.topic));
              break;
          }
        }
      }
    },
  );

  it.each(tenants)(
    '$tenant: grants no managed policy (AWSLambdaBasicExecutionRole writes to any log group)',
    ({ template }) => {
      for (const role of Object.values(template.findResources('AWS::IAM::Role'))) {
        expect(role.Properties.ManagedPolicyArns).toBeUndefined();
        expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
          { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' } },
        ]);
      }
    },
  );

  it.each(tenants)('$tenant: writes each function log to its own log group only', ({ template }) => {
    const resources = template.toJSON().Resources as Record<string, Json>;
    for (const fn of Object.values(template.findResources('AWS::Lambda::Function'))) {
      const roleId: string = fn.Properties.Role['Fn::GetAtt'][0];
      const logGroupId: string = fn.Properties.LoggingConfig.LogGroup.Ref;
      const statements = Object.values(template.findResources('AWS::IAM::Policy'))
        .filter((p) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId))
        .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[])
        .filter((s) => asList(s.Action)[0]?.startsWith('logs:'));
      expect(statements.flatMap((s) => asList(s.Resource))).toEqual([{ 'Fn::GetAtt': [logGroupId, 'Arn'] }]);
      expect(resources[logGroupId]?.Type).toBe('AWS::Logs::LogGroup');
    }
  });

  it.each(tenants)(
    "$tenant: names nothing of the other tenant's and imports nothing",
    ({ tenant, other, template }) => {
      const text = JSON.stringify(template.toJSON());
      expect(text).toContain(`leaseq-${tenant}`);
      // Not its stack, table or streams (`Leaseq-<other>`, `leaseq-<other>-…`): not its name at all.
      expect(text).not.toMatch(new RegExp(other, 'i'));
      expect(text).not.toContain('Fn::ImportValue');
      const stack = tenant === 'acme' ? acme : globex;
      expect(JSON.parse(stack.tenant.tenantConfig).tenant).toBe(tenant);
    },
  );

  it.each(tenants)('$tenant: resource policies admit its own resources only', ({ template }) => {
    const ids = new Set(Object.keys(template.toJSON().Resources));
    const referenced = (v: unknown): string[] => {
      if (Array.isArray(v)) return v.flatMap(referenced);
      if (!v || typeof v !== 'object') return [];
      const o = v as Json;
      if (typeof o.Ref === 'string') return o.Ref.startsWith('AWS::') ? [] : [o.Ref];
      if (Array.isArray(o['Fn::GetAtt'])) return [o['Fn::GetAtt'][0]];
      return Object.values(o).flatMap(referenced);
    };
    // The bucket policies (TLS-only, log delivery from its own claims bucket) and the invoke
    // permissions (its own API, its own schedule) and the alarm topic's policy (TLS-only, its own
    // alarms) refer to this stack's resources and nothing else.
    for (const type of ['AWS::S3::BucketPolicy', 'AWS::Lambda::Permission', 'AWS::SNS::TopicPolicy']) {
      const policies = Object.values(template.findResources(type));
      expect(policies.length).toBeGreaterThan(0);
      for (const p of policies) {
        for (const id of referenced(p.Properties)) expect(ids).toContain(id);
        for (const s of (p.Properties.PolicyDocument?.Statement ?? []) as Statement[]) {
          for (const r of asList(s.Resource)) expect(r).not.toBe('*');
        }
      }
    }
    for (const p of Object.values(template.findResources('AWS::Lambda::Permission'))) {
      expect(p.Properties.SourceArn).toBeDefined();
    }
  });
});

const NAME_PROPERTIES = [
  'TableName',
  'Name',
  'FunctionName',
  'LogGroupName',
  'BucketName',
  'RoleName',
  'StreamName',
];

describe('per-tenant names', () => {
  it.each(tenants)(
    '$tenant: is the stack Leaseq-$tenant, and every name it sets carries the tenant',
    ({ tenant, stack, template }) => {
      expect(stack.stackName).toBe(`Leaseq-${tenant}`);
      expect(stack.artifactId).toBe(`Leaseq-${tenant}`);
      const named: string[] = [];
      for (const [id, r] of Object.entries(template.toJSON().Resources as Record<string, Json>)) {
        for (const key of NAME_PROPERTIES) {
          const value = r.Properties?.[key];
          // A reference (an event source mapping's FunctionName) is a name set elsewhere.
          if (typeof value !== 'string') continue;
          named.push(`${r.Type}.${key}`);
          expect(value, `${id}.${key}`).toMatch(new RegExp(`^leaseq-${tenant}(-|$)`));
        }
      }
      // The table, one stream per queue, the HTTP API and the wake channel are named; nothing else is.
      expect(named.sort()).toEqual(
        [
          'AWS::ApiGatewayV2::Api.Name',
          'AWS::ApiGatewayV2::Api.Name',
          'AWS::DynamoDB::Table.TableName',
          ...QUEUES.map(() => 'AWS::Kinesis::Stream.Name'),
        ].sort(),
      );
      template.hasResourceProperties('AWS::DynamoDB::Table', { TableName: `leaseq-${tenant}` });
      for (const q of QUEUES)
        template.hasResourceProperties('AWS::Kinesis::Stream', { Name: `leaseq-${tenant}-${q}` });
    },
  );

  it.each(tenants)(
    '$tenant: leaves function, log group, role and bucket names to CloudFormation, which starts them with the stack name',
    ({ tenant, template }) => {
      // CloudFormation names an unnamed function `Leaseq-<tenant>-<logical id>-<suffix>` (buckets
      // the same, lower-cased): the stack name is what carries the tenant. Leaving them unnamed
      // keeps replacements possible and two tenants' resources from colliding.
      const resources = template.toJSON().Resources as Record<string, Json>;
      const unnamed: Record<string, string> = {
        'AWS::Lambda::Function': 'FunctionName',
        'AWS::Logs::LogGroup': 'LogGroupName',
        'AWS::IAM::Role': 'RoleName',
        'AWS::S3::Bucket': 'BucketName',
      };
      for (const [type, key] of Object.entries(unnamed)) {
        const ofType = Object.values(resources).filter((r) => r.Type === type);
        expect(ofType.length).toBeGreaterThan(0);
        for (const r of ofType) expect(r.Properties?.[key]).toBeUndefined();
      }
      expect(Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::Function')).toHaveLength(5);
      expect(`Leaseq-${tenant}`).toMatch(/^Leaseq-[a-z0-9-]{1,32}$/);
    },
  );

  it.each(tenants)('$tenant: tags every taggable resource leaseq:tenant=$tenant', ({ tenant, template }) => {
    const tagged: string[] = [];
    for (const [id, r] of Object.entries(template.toJSON().Resources as Record<string, Json>)) {
      const tags = r.Properties?.Tags;
      if (tags === undefined) continue;
      tagged.push(r.Type);
      const value = Array.isArray(tags)
        ? (tags as { Key: string; Value: string }[]).find((t) => t.Key === 'leaseq:tenant')?.Value
        : (tags as Record<string, string>)['leaseq:tenant'];
      expect(value, id).toBe(tenant);
    }
    for (const type of [
      'AWS::DynamoDB::Table',
      'AWS::Kinesis::Stream',
      'AWS::S3::Bucket',
      'AWS::Lambda::Function',
      'AWS::IAM::Role',
      'AWS::Logs::LogGroup',
      'AWS::ApiGatewayV2::Api',
    ]) {
      expect(tagged).toContain(type);
    }
  });
});

describe('on delete', () => {
  it.each(tenants)(
    '$tenant: retains its data and their logs (README "For teams"), nothing else',
    ({ template }) => {
      const resources = Object.values(template.toJSON().Resources as Record<string, Json>);
      const kept = (r: Json) => r.DeletionPolicy === 'Retain' || r.UpdateReplacePolicy === 'Retain';
      const retained = resources.filter(kept).map((r) => {
        expect([r.DeletionPolicy, r.UpdateReplacePolicy]).toEqual(['Retain', 'Retain']);
        return r.Type as string;
      });
      // The rest goes with the stack; a KMS key only when it says so (its default is to stay):
      // the tenant's one key, whose sealed SQS credentials are made again rather than kept and
      // whose alarm topic encrypts nothing that outlives it.
      for (const r of resources.filter((r) => !kept(r))) {
        expect([r.DeletionPolicy ?? 'Delete', r.UpdateReplacePolicy ?? 'Delete']).toEqual([
          'Delete',
          'Delete',
        ]);
      }
      expect(resources.filter((r) => r.Type === 'AWS::KMS::Key').map((r) => r.DeletionPolicy)).toEqual([
        'Delete',
      ]);
      const count = (type: string) => retained.filter((t) => t === type).length;
      expect(count('AWS::DynamoDB::Table')).toBe(1);
      expect(count('AWS::S3::Bucket')).toBe(2); // claims and their access logs
      expect(count('AWS::Kinesis::Stream')).toBe(QUEUES.length);
      // each function's, and the access logs of the API and of the wake channel
      expect(count('AWS::Logs::LogGroup')).toBe(5 + 2);
      expect(retained).toHaveLength(1 + 2 + QUEUES.length + 7);
    },
  );
});

describe('every file in tenants/', () => {
  const dir = new URL('../../tenants/', import.meta.url);
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

  it('is there', () => {
    expect(files).toEqual(expect.arrayContaining(['local.json', 'example-push.json']));
  });

  // What `cdk synth -c tenant=<name>` does, with the test code in place of the esbuild bundle.
  it.each(files)('%s synthesizes as its own stack, with no cdk-nag finding', (file) => {
    const tenant = file.replace(/\.json$/, '');
    const raw: unknown = JSON.parse(readFileSync(new URL(file, dir), 'utf8'));
    const { app: fileApp, stack } = buildApp(raw, {
      app: new App(),
      source: `tenants/${file}`,
      tenant,
      functionCode,
    });
    expect(stack.stackName).toBe(`Leaseq-${tenant}`);
    // Synthesis runs the AwsSolutions pack and throws on a finding.
    const assembly = fileApp.synth();
    expect(assembly.stacks.map((s) => s.stackName)).toEqual([`Leaseq-${tenant}`]);
    expect(nagFindings(stack)).toEqual({});
    expect(JSON.stringify(assembly.getStackByName(`Leaseq-${tenant}`).template)).toContain(
      `"leaseq-${tenant}"`,
    );
  });
});
