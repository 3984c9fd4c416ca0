import { type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { ALARM_OWNERS, type AlarmKind } from '../../functions/observability/alarm-rules.js';
import {
  countProduced,
  METRICS_NAMESPACE,
  metricsOptions,
  SERVICE,
} from '../../functions/observability/metrics.js';
import { buildApp } from '../../infra/build-app.js';
import { CapturedMetrics } from '../helpers/captured-metrics.js';
import { owned } from '../helpers/owned.js';

// The alarm topic and the alarms CloudWatch keeps (docs/alarms.md); the queues' own are the sweep's (test/unit/queue-alarms.test.ts).

const functionCode = lambda.Code.fromInline('export const handler = async () => ({ statusCode: 200 });');

const { app, stack } = buildApp(
  owned({
    tenant: 'acme',
    queues: {
      // Pulled by receive, a 72 h retention (alarms at 36 h).
      orders: { shards: 2, retention_hours: 72, dlq_retention_hours: 200 },
      // Pushed to a Lambda consumer: never received, so no receive counters.
      events: { shards: 1, consumers: [{ name: 'billing', entry: 'examples/lambda-consumer.ts' }] },
      // Ordered: a stall and a parked key have alarms of their own, the consumer's keys too.
      ledger: { ordered: true, shards: 1 },
      feed: {
        ordered: true,
        shards: 1,
        consumers: [{ name: 'search', entry: 'examples/lambda-consumer.ts' }],
      },
    },
    alarms: {
      email: ['ops@acme.example', 'oncall@acme.example'],
      consuming_team: ['orders-team@acme.example'],
      platform: ['platform@acme.example'],
      producing_team: ['producers@acme.example'],
    },
  }),
  { functionCode },
);
const { stack: quiet } = buildApp(
  { tenant: 'quiet', queues: { jobs: { tier: 'ephemeral' } } },
  { app, functionCode },
);
const { stack: sharing } = buildApp(
  {
    tenant: 'sharing',
    queues: { a: { tier: 'ephemeral' }, b: { tier: 'ephemeral' }, c: { tier: 'ephemeral' } },
  },
  { app, functionCode },
);
const template = Template.fromStack(stack);

const logicalId = (c: IConstruct | undefined) =>
  Stack.of(stack).getLogicalId(c?.node.defaultChild as CfnElement);
const topicRef = { Ref: logicalId(stack.tenant.alarms.topic) };
const tenantDims = [
  { Name: 'service', Value: SERVICE.api },
  { Name: 'tenant', Value: 'acme' },
];

/** The one alarm of that name, its properties. */
function alarm(name: string) {
  const found = Object.values(
    template.findResources('AWS::CloudWatch::Alarm', { Properties: { AlarmName: name } }),
  );
  expect(found, name).toHaveLength(1);
  return found[0]?.Properties;
}

describe("the stack's CloudWatch alarms", () => {
  it("are each stream's two and the tenant's three: the queues' are the sweep's to evaluate", () => {
    const names = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map(
      (a) => a.Properties.AlarmName as string,
    );
    expect(names.sort()).toEqual(
      [
        'leaseq-acme/events/iterator-age',
        'leaseq-acme/events/write-throttled',
        'leaseq-acme/orders/iterator-age',
        'leaseq-acme/orders/write-throttled',
        'leaseq-acme/ledger/iterator-age',
        'leaseq-acme/ledger/write-throttled',
        'leaseq-acme/feed/iterator-age',
        'leaseq-acme/feed/write-throttled',
        'leaseq-acme/tenant/sweep-silent',
        'leaseq-acme/tenant/sweep-failing',
        'leaseq-acme/tenant/produce-rate-anomaly',
      ].sort(),
    );
  });

  it('invoke the relay, which tells the topic, when each goes off and when it clears', () => {
    const relay = { 'Fn::GetAtt': [logicalId(stack.tenant.alarms.relay), 'Arn'] };
    for (const a of Object.values(template.findResources('AWS::CloudWatch::Alarm'))) {
      expect(a.Properties.AlarmActions).toEqual([relay]);
      expect(a.Properties.OKActions).toEqual([relay]);
      expect(a.Properties.ComparisonOperator).toBe(
        a.Properties.AlarmName.endsWith('/produce-rate-anomaly')
          ? 'GreaterThanUpperThreshold'
          : a.Properties.AlarmName.endsWith('/sweep-silent')
            ? 'LessThanThreshold'
            : 'GreaterThanThreshold',
      );
      expect(a.Properties.AlarmDescription.length).toBeGreaterThan(40);
    }
  });

  it("watch the sweep by its function's own metrics: no invocation in 15 minutes, or failures in each of three periods", () => {
    const sweep = { Ref: logicalId(stack.tenant.sweepFunction) };
    expect(alarm('leaseq-acme/tenant/sweep-silent')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Invocations',
      Dimensions: [{ Name: 'FunctionName', Value: sweep }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      EvaluationPeriods: 3,
      TreatMissingData: 'breaching',
    });
    expect(alarm('leaseq-acme/tenant/sweep-failing')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: sweep }],
      Threshold: 0,
      EvaluationPeriods: 3,
      TreatMissingData: 'notBreaching',
    });
  });

  it("watch the tenant's produced count against its learned band, for the platform", () => {
    const a = alarm('leaseq-acme/tenant/produce-rate-anomaly');
    expect(a).toMatchObject({ EvaluationPeriods: 2, ThresholdMetricId: expect.any(String) });
    const produced = a.Metrics.find((m: { MetricStat?: unknown }) => m.MetricStat)?.MetricStat;
    expect(produced).toMatchObject({
      Metric: { Namespace: METRICS_NAMESPACE, MetricName: 'produced', Dimensions: tenantDims },
      Stat: 'Sum',
      Period: 300,
    });
    expect(a.Metrics.find((m: { Expression?: string }) => m.Expression)?.Expression).toMatch(
      /^ANOMALY_DETECTION_BAND\(m\w*, 3\)$/,
    );
  });

  it("iterator age: the queue's own stream, over half its retention in ms, and a stream nobody reads", () => {
    const stream = stack.tenant.queues.get('orders')?.stream;
    expect(alarm('leaseq-acme/orders/iterator-age')).toMatchObject({
      Namespace: 'AWS/Kinesis',
      MetricName: 'GetRecords.IteratorAgeMilliseconds',
      Dimensions: [{ Name: 'StreamName', Value: { Ref: logicalId(stream) } }],
      Statistic: 'Maximum',
      Threshold: 36 * 3600 * 1000,
      EvaluationPeriods: 3,
      TreatMissingData: 'breaching',
    });
  });
});

describe('the sweep and the relay', () => {
  const policies = (role: string) =>
    Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((p) => JSON.stringify(p.Properties.Roles).includes(role))
      .flatMap((p) => p.Properties.PolicyDocument.Statement);

  it('may publish to the topic and nothing else of it, and are told where it is', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    for (const [fn, role] of [
      [stack.tenant.sweepFunction, 'SweepServiceRole'],
      [stack.tenant.alarms.relay, 'RelayServiceRole'],
    ] as const) {
      expect(functions[logicalId(fn)]?.Properties.Environment.Variables.LEASEQ_ALARM_TOPIC_ARN).toEqual(
        topicRef,
      );
      const statements = policies(role);
      expect(statements.filter((st) => JSON.stringify(st.Action).includes('sns:'))).toEqual([
        expect.objectContaining({ Action: 'sns:Publish', Effect: 'Allow', Resource: topicRef }),
      ]);
      // SNS's own key admits the account's principals through SNS: no KMS grant.
      expect(JSON.stringify(statements)).not.toContain('kms:');
    }
  });

  it("let only this tenant's alarms invoke the relay, in this account", () => {
    const permissions = Object.values(template.findResources('AWS::Lambda::Permission')).filter((p) =>
      JSON.stringify(p.Properties.FunctionName).includes(logicalId(stack.tenant.alarms.relay)),
    );
    expect(permissions.map((p) => p.Properties)).toEqual([
      {
        Action: 'lambda:InvokeFunction',
        FunctionName: { 'Fn::GetAtt': [logicalId(stack.tenant.alarms.relay), 'Arn'] },
        Principal: 'lambda.alarms.cloudwatch.amazonaws.com',
        SourceAccount: { Ref: 'AWS::AccountId' },
        SourceArn: {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':cloudwatch:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              ':alarm:leaseq-acme/*',
            ],
          ],
        },
      },
    ]);
  });
});

describe('a shared stream', () => {
  it("is watched once, under the stream's name, not once per queue", () => {
    const names = Object.values(Template.fromStack(sharing).findResources('AWS::CloudWatch::Alarm')).map(
      (a) => a.Properties.AlarmName as string,
    );
    for (const kind of ['iterator-age', 'write-throttled'])
      expect(names.filter((n) => n.endsWith(`/${kind}`))).toEqual([
        `leaseq-sharing/leaseq-sharing_shared/${kind}`,
      ]);
  });
});

describe('write throttling', () => {
  it("watches the queue's own stream: throttled writes in two 5-minute periods running", () => {
    for (const queue of ['orders', 'feed']) {
      const stream = stack.tenant.queues.get(queue)?.stream;
      expect(alarm(`leaseq-acme/${queue}/write-throttled`)).toMatchObject({
        Namespace: 'AWS/Kinesis',
        MetricName: 'WriteProvisionedThroughputExceeded',
        Dimensions: [{ Name: 'StreamName', Value: { Ref: logicalId(stream) } }],
        Statistic: 'Sum',
        Period: 300,
        EvaluationPeriods: 2,
        Threshold: 0,
        TreatMissingData: 'notBreaching',
      });
    }
  });
});

describe('the owner', () => {
  it("names each alarm's owner in its description and sends an owner's addresses only its alarms", () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties);
    for (const a of alarms) {
      const kind = String(a.AlarmName).split('/').at(-1) as AlarmKind;
      const label = {
        platform: 'For the platform team: ',
        consuming_team: 'For the consuming team: ',
        producing_team: 'For the producing team: ',
      }[ALARM_OWNERS[kind]];
      expect(a.AlarmDescription, a.AlarmName).toMatch(new RegExp(`^${label}`));
    }
    const byAddress = (address: string) =>
      Object.values(template.findResources('AWS::SNS::Subscription')).find(
        (s) => s.Properties.Endpoint === address,
      )?.Properties;
    expect(byAddress('platform@acme.example')).toMatchObject({
      FilterPolicyScope: 'MessageBody',
      FilterPolicy: {
        AlarmName: [
          { suffix: '/expired-unprocessed' },
          { suffix: '/sweep-silent' },
          { suffix: '/sweep-failing' },
          { suffix: '/drift' },
          { suffix: '/iterator-age' },
          { suffix: '/write-throttled' },
          { suffix: '/produce-rate-anomaly' },
        ],
      },
    });
    expect(byAddress('producers@acme.example')).toMatchObject({
      FilterPolicyScope: 'MessageBody',
      FilterPolicy: { AlarmName: [{ suffix: '/quota-throttled' }] },
    });
    const consuming = byAddress('orders-team@acme.example');
    expect(consuming?.FilterPolicyScope).toBe('MessageBody');
    expect(consuming?.FilterPolicy.AlarmName).toEqual(
      expect.arrayContaining([{ suffix: '/stale-receipt-rate' }, { suffix: '/parked-keys' }]),
    );
    expect(consuming?.FilterPolicy.AlarmName).not.toContainEqual({ suffix: '/iterator-age' });
    // Every alarm, the stack's and the sweep's, goes to exactly one owner's filter.
    const kinds = Object.keys(ALARM_OWNERS);
    const filtered = [
      ...(consuming?.FilterPolicy.AlarmName ?? []),
      ...(byAddress('platform@acme.example')?.FilterPolicy.AlarmName ?? []),
      ...(byAddress('producers@acme.example')?.FilterPolicy.AlarmName ?? []),
    ];
    for (const kind of kinds)
      expect(
        filtered.filter((f) => f.suffix === `/${kind}`),
        kind,
      ).toHaveLength(1);
    // Everyone on alarms.email hears everything: no filter.
    expect(byAddress('ops@acme.example')?.FilterPolicy).toBeUndefined();
  });

  it('subscribes each address of the tenant file to the topic by email', () => {
    const subscriptions = Object.values(template.findResources('AWS::SNS::Subscription')).map(
      (s) => s.Properties,
    );
    expect(subscriptions).toEqual(
      expect.arrayContaining([
        { Protocol: 'email', Endpoint: 'ops@acme.example', TopicArn: topicRef },
        { Protocol: 'email', Endpoint: 'oncall@acme.example', TopicArn: topicRef },
        expect.objectContaining({
          Protocol: 'email',
          Endpoint: 'orders-team@acme.example',
          TopicArn: topicRef,
        }),
        expect.objectContaining({ Protocol: 'email', Endpoint: 'platform@acme.example', TopicArn: topicRef }),
        expect.objectContaining({
          Protocol: 'email',
          Endpoint: 'producers@acme.example',
          TopicArn: topicRef,
        }),
      ]),
    );
    expect(subscriptions).toHaveLength(6);
    // An ephemeral queue needs no owner: the topic and alarms are there to subscribe to later, with
    // nobody on it; its stream's two and the tenant's three are all CloudWatch keeps.
    const quietTemplate = Template.fromStack(quiet);
    quietTemplate.resourceCountIs('AWS::SNS::Topic', 1);
    quietTemplate.resourceCountIs('AWS::SNS::Subscription', 0);
    quietTemplate.resourceCountIs('AWS::CloudWatch::Alarm', 5);
  });

  it("keeps the addresses out of the functions' bundled config and environment, which only the stack needs", () => {
    const file = JSON.parse(stack.tenant.tenantConfig);
    expect(Object.keys(file).sort()).toEqual(['queues', 'tenant']);
    expect(stack.tenant.tenantConfig).not.toContain('acme.example');
    const functions = Object.values(template.findResources('AWS::Lambda::Function'));
    expect(functions.length).toBeGreaterThan(0);
    for (const fn of functions)
      expect(JSON.stringify(fn.Properties.Environment)).not.toContain('acme.example');
  });

  it("encrypts the topic with SNS's own key, takes TLS publishes only, and outputs its ARN", () => {
    const [topic] = Object.values(template.findResources('AWS::SNS::Topic'));
    expect(JSON.stringify(topic?.Properties.KmsMasterKeyId)).toMatch(/:alias\/aws\/sns"/);
    const [policy] = Object.values(template.findResources('AWS::SNS::TopicPolicy'));
    expect(policy?.Properties.PolicyDocument.Statement).toEqual([
      expect.objectContaining({
        Effect: 'Deny',
        Principal: '*',
        Action: 'sns:Publish',
        Condition: { Bool: { 'aws:SecureTransport': 'false' } },
      }),
    ]);
    template.hasOutput('AlarmTopicArn', { Value: topicRef });
  });
});

describe('what the functions emit', () => {
  it("counts the tenant's produced messages under the namespace and dimensions its anomaly alarm watches, in the queue's one document", () => {
    // As functions/api/queue-calls.ts counts a produce.
    const api = new CapturedMetrics(metricsOptions(SERVICE.api, 'acme'));
    countProduced(api, 'orders', 4, 1);
    api.publishStoredMetrics();
    const [doc, duplicates, ...rest] = api.documents;
    expect(rest).toEqual([]);
    expect(doc).toMatchObject({ produced: 4, queue: 'orders', tenant: 'acme', service: SERVICE.api });
    const [set] = doc?._aws.CloudWatchMetrics ?? [];
    const a = alarm('leaseq-acme/tenant/produce-rate-anomaly');
    const watched = a.Metrics.find((m: { MetricStat?: unknown }) => m.MetricStat).MetricStat.Metric;
    expect(set?.Namespace).toBe(watched.Namespace);
    expect(set?.Dimensions.map((d) => [...d].sort())).toEqual([
      ['queue', 'service', 'tenant'],
      watched.Dimensions.map((d: { Name: string }) => d.Name).sort(),
    ]);
    // Duplicates stay the queue's: no tenant-wide metric of them.
    expect(duplicates).toMatchObject({ duplicate: 1, queue: 'orders' });
    expect(duplicates?._aws.CloudWatchMetrics[0]?.Dimensions).toHaveLength(1);
  });
});

describe("the queues' tiers", () => {
  const { stack: tiered } = buildApp(
    {
      tenant: 'tiers',
      queues: {
        crit: { tier: 'critical', owner: 'ledger-team', retention_hours: 24 },
        std: { owner: 'jobs-team' },
        eph: { tier: 'ephemeral' },
      },
      alarms: { page: ['oncall@tiers.example'] },
      exceptions: [
        {
          queue: 'crit',
          setting: 'retention_hours',
          owner: 'data-eng',
          reason: 'migration',
          expires: '2099-01-31',
        },
      ],
    },
    { functionCode },
  );
  const t = Template.fromStack(tiered);

  it("send the on-call route what the tiers page on, a critical queue's lost records too", () => {
    const [page] = Object.values(
      t.findResources('AWS::SNS::Subscription', { Properties: { Endpoint: 'oncall@tiers.example' } }),
    );
    expect(page?.Properties.FilterPolicyScope).toBe('MessageBody');
    expect([...(page?.Properties.FilterPolicy.AlarmName ?? [])].sort()).toEqual([
      'leaseq-tiers/crit/dlq-expired',
      'leaseq-tiers/crit/dlq-expiring',
      'leaseq-tiers/crit/dlq-oldest-age',
      'leaseq-tiers/crit/drift',
      'leaseq-tiers/crit/exception-expired',
      'leaseq-tiers/crit/expired-unprocessed',
      'leaseq-tiers/std/dlq-expired',
      'leaseq-tiers/std/dlq-expiring',
      'leaseq-tiers/std/dlq-oldest-age',
    ]);
  });

  it('page on the day an exception expires, through the alarm topic, and protect the table of a critical queue', () => {
    const schedules = Object.values(t.findResources('AWS::Scheduler::Schedule')).map((s) => s.Properties);
    expect(schedules).toHaveLength(1);
    expect(schedules[0]).toMatchObject({
      ScheduleExpression: 'at(2099-01-31T00:00:00)',
      ScheduleExpressionTimezone: 'UTC',
      Target: {
        Arn: {
          Ref: Stack.of(tiered).getLogicalId(tiered.tenant.alarms.topic.node.defaultChild as CfnElement),
        },
      },
    });
    expect(JSON.parse(schedules[0]?.Target.Input).AlarmName).toBe('leaseq-tiers/crit/exception-expired');
    t.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: true });
    Template.fromStack(quiet).hasResourceProperties('AWS::DynamoDB::Table', {
      DeletionProtectionEnabled: false,
    });
  });
});
