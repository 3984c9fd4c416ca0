import { type CfnElement, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import {
  countFor,
  METRICS_NAMESPACE,
  metricsOptions,
  publishGauges,
  publishHeartbeat,
  recordDurations,
  SERVICE,
} from '../../functions/observability/metrics.js';
import { ALARM_OWNERS, type AlarmKind } from '../../infra/alarm-rules.js';
import { buildApp } from '../../infra/build-app.js';
import { CapturedMetrics } from '../helpers/captured-metrics.js';
import { owned } from '../helpers/owned.js';

// The alarms (docs/alarms.md): one set per queue, all telling the tenant's owner through one topic.

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
const dims = (service: string, queue: string) => [
  { Name: 'queue', Value: queue },
  { Name: 'service', Value: service },
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

describe('alarms per queue', () => {
  it('makes thirteen for a pulled queue of its own stream, ten for a pushed one, five per consumer and two more when ordered, one for the sweep, named by tenant and queue', () => {
    const names = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map(
      (a) => a.Properties.AlarmName as string,
    );
    expect(names.sort()).toEqual(
      [
        'leaseq-acme/events/dlq-oldest-age',
        'leaseq-acme/events/dlq-expiring',
        'leaseq-acme/events/dlq-expired',
        'leaseq-acme/events/produce-rate-anomaly',
        'leaseq-acme/events/quota-throttled',
        'leaseq-acme/events/expired-unprocessed',
        'leaseq-acme/events/drift',
        'leaseq-acme/events/iterator-age',
        'leaseq-acme/events/write-throttled',
        'leaseq-acme/events/oldest-unacked-age',
        'leaseq-acme/events~billing/dlq-oldest-age',
        'leaseq-acme/events~billing/dlq-expiring',
        'leaseq-acme/events~billing/dlq-expired',
        'leaseq-acme/events~billing/redelivery-rate',
        'leaseq-acme/events~billing/handler-duration',
        'leaseq-acme/orders/dlq-oldest-age',
        'leaseq-acme/orders/dlq-expiring',
        'leaseq-acme/orders/dlq-expired',
        'leaseq-acme/orders/produce-rate-anomaly',
        'leaseq-acme/orders/quota-throttled',
        'leaseq-acme/orders/expired-unprocessed',
        'leaseq-acme/orders/drift',
        'leaseq-acme/orders/iterator-age',
        'leaseq-acme/orders/write-throttled',
        'leaseq-acme/orders/oldest-unacked-age',
        'leaseq-acme/orders/redelivery-rate',
        'leaseq-acme/orders/stale-receipt-rate',
        'leaseq-acme/orders/handler-duration',
        'leaseq-acme/ledger/dlq-oldest-age',
        'leaseq-acme/ledger/dlq-expiring',
        'leaseq-acme/ledger/dlq-expired',
        'leaseq-acme/ledger/produce-rate-anomaly',
        'leaseq-acme/ledger/quota-throttled',
        'leaseq-acme/ledger/expired-unprocessed',
        'leaseq-acme/ledger/drift',
        'leaseq-acme/ledger/iterator-age',
        'leaseq-acme/ledger/write-throttled',
        'leaseq-acme/ledger/oldest-unacked-age',
        'leaseq-acme/ledger/redelivery-rate',
        'leaseq-acme/ledger/stale-receipt-rate',
        'leaseq-acme/ledger/handler-duration',
        'leaseq-acme/ledger/ordered-stall',
        'leaseq-acme/ledger/parked-keys',
        'leaseq-acme/feed/dlq-oldest-age',
        'leaseq-acme/feed/dlq-expiring',
        'leaseq-acme/feed/dlq-expired',
        'leaseq-acme/feed/produce-rate-anomaly',
        'leaseq-acme/feed/quota-throttled',
        'leaseq-acme/feed/expired-unprocessed',
        'leaseq-acme/feed/drift',
        'leaseq-acme/feed/iterator-age',
        'leaseq-acme/feed/write-throttled',
        'leaseq-acme/feed/oldest-unacked-age',
        'leaseq-acme/feed~search/dlq-oldest-age',
        'leaseq-acme/feed~search/dlq-expiring',
        'leaseq-acme/feed~search/dlq-expired',
        'leaseq-acme/feed~search/redelivery-rate',
        'leaseq-acme/feed~search/handler-duration',
        'leaseq-acme/feed~search/parked-keys',
        'leaseq-acme/feed~search/ordered-stall',
        'leaseq-acme/tenant/sweep-silent',
      ].sort(),
    );
  });

  it('notifies the topic when each alarm goes off and when it clears', () => {
    for (const a of Object.values(template.findResources('AWS::CloudWatch::Alarm'))) {
      expect(a.Properties.AlarmActions).toEqual([topicRef]);
      expect(a.Properties.OKActions).toEqual([topicRef]);
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

  it('redelivery: redelivered / received over 10 % for 2 one-minute periods, 0 when nothing was received', () => {
    const a = alarm('leaseq-acme/orders/redelivery-rate');
    expect(a).toMatchObject({ Threshold: 10, EvaluationPeriods: 2, TreatMissingData: 'notBreaching' });
    expect(a.DatapointsToAlarm ?? a.EvaluationPeriods).toBe(2);
    const metrics = a.Metrics as {
      Id: string;
      Expression?: string;
      MetricStat?: unknown;
      ReturnData: boolean;
    }[];
    const [expression] = metrics.filter((m) => m.Expression);
    expect(expression).toMatchObject({
      Expression: 'IF(FILL(received, 0) >= 10, 100 * FILL(redelivered, 0) / FILL(received, 0), 0)',
      ReturnData: true,
    });
    // The api's counters of this queue, summed per minute, as its EMF documents name them.
    for (const name of ['received', 'redelivered']) {
      expect(metrics.find((m) => m.Id === name)).toEqual({
        Id: name,
        ReturnData: false,
        MetricStat: {
          Metric: { Namespace: 'leaseq', MetricName: name, Dimensions: dims('leaseq-api', 'orders') },
          Period: 60,
          Stat: 'Sum',
        },
      });
    }
  });

  it('noisy producers: any 429 over 5 minutes, and the produced count above 3 standard deviations of its band', () => {
    expect(alarm('leaseq-acme/events/quota-throttled')).toMatchObject({
      MetricName: 'throttled',
      Dimensions: dims('leaseq-api', 'events'),
      Statistic: 'Sum',
      Period: 300,
      Threshold: 0,
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
    });
    const a = alarm('leaseq-acme/orders/produce-rate-anomaly');
    expect(a).toMatchObject({ ComparisonOperator: 'GreaterThanUpperThreshold', EvaluationPeriods: 2 });
    const metrics = a.Metrics as {
      Id: string;
      Expression?: string;
      MetricStat?: { Metric: unknown; Stat: string };
    }[];
    const band = metrics.find((m) => m.Expression?.startsWith('ANOMALY_DETECTION_BAND'));
    expect(a.ThresholdMetricId).toBe(band?.Id);
    const produced = metrics.find((m) => m.MetricStat);
    expect(band?.Expression).toBe(`ANOMALY_DETECTION_BAND(${produced?.Id}, 3)`);
    expect(produced?.MetricStat).toMatchObject({
      Metric: { Namespace: 'leaseq', MetricName: 'produced', Dimensions: dims('leaseq-api', 'orders') },
      Stat: 'Sum',
    });
  });

  it('stale receipts: stale over acked + nacked + stale above 5 % for 2 one-minute periods, 0 under 10 receipts', () => {
    const a = alarm('leaseq-acme/orders/stale-receipt-rate');
    expect(a).toMatchObject({ Threshold: 5, EvaluationPeriods: 2, TreatMissingData: 'notBreaching' });
    expect(a.AlarmDescription).toContain('consuming team');
    const metrics = a.Metrics as { Id: string; Expression?: string; MetricStat?: { Metric: unknown } }[];
    expect(metrics.find((m) => m.Expression)?.Expression).toBe(
      'IF(FILL(acked, 0) + FILL(nacked, 0) + FILL(stale, 0) >= 10, ' +
        '100 * FILL(stale, 0) / (FILL(acked, 0) + FILL(nacked, 0) + FILL(stale, 0)), 0)',
    );
    for (const [id, name] of [
      ['acked', 'acked'],
      ['nacked', 'nacked'],
      ['stale', 'stale_receipts'],
    ])
      expect(metrics.find((m) => m.Id === id)?.MetricStat?.Metric).toEqual({
        Namespace: 'leaseq',
        MetricName: name,
        Dimensions: dims('leaseq-api', 'orders'),
      });
  });

  it('redelivery of a Lambda consumer: the same rule over the counters the consumer publishes', () => {
    const a = alarm('leaseq-acme/events~billing/redelivery-rate');
    expect(a).toMatchObject({ Threshold: 10, EvaluationPeriods: 2, TreatMissingData: 'notBreaching' });
    const metrics = a.Metrics as { Id: string; MetricStat?: { Metric: unknown } }[];
    for (const name of ['received', 'redelivered']) {
      expect(metrics.find((m) => m.Id === name)?.MetricStat?.Metric).toEqual({
        Namespace: 'leaseq',
        MetricName: name,
        Dimensions: dims('leaseq-consumer', 'events~billing'),
      });
    }
  });

  it('oldest unacked age: over half the queue retention; silence is an empty queue', () => {
    expect(alarm('leaseq-acme/orders/oldest-unacked-age')).toMatchObject({
      Namespace: 'leaseq',
      MetricName: 'oldest_unacked_age',
      Dimensions: dims('leaseq-sweep', 'orders'),
      Statistic: 'Maximum',
      Period: 300,
      EvaluationPeriods: 3,
      Threshold: 36 * 3600,
      TreatMissingData: 'notBreaching',
    });
    // The default retention, 24 h.
    expect(alarm('leaseq-acme/events/oldest-unacked-age').Threshold).toBe(12 * 3600);
  });

  it("sweep silent: the tenant's sweep published no heartbeat for three 5-minute periods", () => {
    expect(alarm('leaseq-acme/tenant/sweep-silent')).toMatchObject({
      Namespace: 'leaseq',
      MetricName: 'sweep_heartbeat',
      Dimensions: [
        { Name: 'service', Value: 'leaseq-sweep' },
        { Name: 'tenant', Value: 'acme' },
      ],
      Statistic: 'Sum',
      Period: 300,
      EvaluationPeriods: 3,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
  });

  it("DLQ oldest age: a dead letter over an hour old, in a queue's DLQ or a consumer's", () => {
    for (const queue of ['orders', 'events', 'events~billing']) {
      expect(alarm(`leaseq-acme/${queue}/dlq-oldest-age`)).toMatchObject({
        Namespace: 'leaseq',
        MetricName: 'dlq_oldest_age',
        Dimensions: dims('leaseq-sweep', queue),
        Statistic: 'Maximum',
        Period: 300,
        EvaluationPeriods: 1,
        Threshold: 3600,
        TreatMissingData: 'notBreaching',
      });
    }
  });

  it("handler duration: p99 over half the lease, a pull queue's from its ack and nack times, a consumer's from its calls", () => {
    expect(alarm('leaseq-acme/orders/handler-duration')).toMatchObject({
      Namespace: 'leaseq',
      MetricName: 'handler_seconds',
      Dimensions: dims('leaseq-api', 'orders'),
      ExtendedStatistic: 'p99',
      Period: 300,
      EvaluationPeriods: 1,
      // The default lease, 60 s.
      Threshold: 30,
      TreatMissingData: 'notBreaching',
    });
    // A Lambda consumer's lease is its invocation: the default timeout, 60 s.
    expect(alarm('leaseq-acme/events~billing/handler-duration')).toMatchObject({
      Dimensions: dims('leaseq-consumer', 'events~billing'),
      ExtendedStatistic: 'p99',
      Threshold: 30,
    });
  });

  it('ordered stall: a shard of an ordered queue (or of its Lambda consumer) stuck over 5 minutes, for the consuming team', () => {
    for (const queue of ['ledger', 'feed~search']) {
      const a = alarm(`leaseq-acme/${queue}/ordered-stall`);
      expect(a).toMatchObject({
        Namespace: 'leaseq',
        MetricName: 'commit_stalled_seconds',
        Dimensions: dims('leaseq-sweep', queue),
        Statistic: 'Maximum',
        Period: 300,
        EvaluationPeriods: 1,
        Threshold: 300,
        TreatMissingData: 'notBreaching',
      });
      expect(a.AlarmDescription).toMatch(/^For the consuming team/);
    }
  });

  it("parked keys: any parked key of an ordered queue, or of an ordered queue's Lambda consumer", () => {
    for (const ns of ['ledger', 'feed~search']) {
      expect(alarm(`leaseq-acme/${ns}/parked-keys`)).toMatchObject({
        Namespace: 'leaseq',
        MetricName: 'parked_keys',
        Dimensions: dims('leaseq-sweep', ns),
        Statistic: 'Maximum',
        Threshold: 0,
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      });
    }
    expect(alarm('leaseq-acme/feed~search/parked-keys').AlarmDescription).toContain(
      'GET /queues/feed/keys/parked?consumer=search',
    );
  });

  it('expired unprocessed: any record lost before admission', () => {
    expect(alarm('leaseq-acme/orders/expired-unprocessed')).toMatchObject({
      Namespace: 'leaseq',
      MetricName: 'expired_unprocessed',
      Dimensions: dims('leaseq-sweep', 'orders'),
      Statistic: 'Maximum',
      Period: 300,
      EvaluationPeriods: 1,
      Threshold: 0,
      TreatMissingData: 'notBreaching',
    });
  });

  it("iterator age: the queue's own stream, over half its retention in ms, and a stream nobody reads", () => {
    for (const [queue, hours] of [
      ['orders', 36],
      ['events', 12], // the default retention, 24 h
    ] as const) {
      const stream = stack.tenant.queues.get(queue)?.stream;
      expect(alarm(`leaseq-acme/${queue}/iterator-age`)).toMatchObject({
        Namespace: 'AWS/Kinesis',
        MetricName: 'GetRecords.IteratorAgeMilliseconds',
        Dimensions: [{ Name: 'StreamName', Value: { Ref: logicalId(stream) } }],
        Statistic: 'Maximum',
        Period: 300,
        EvaluationPeriods: 3,
        Threshold: hours * 3600 * 1000,
        TreatMissingData: 'breaching',
      });
    }
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
    // Each queue keeps the alarms of its own state.
    for (const q of ['a', 'b', 'c']) expect(names).toContain(`leaseq-sharing/${q}/oldest-unacked-age`);
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
    // Every alarm the stack makes goes to exactly one owner's filter.
    const kinds = new Set(alarms.map((a) => String(a.AlarmName).split('/').at(-1)));
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
    // nobody on it, and its dead letters page nobody (no dlq-oldest-age).
    const quietTemplate = Template.fromStack(quiet);
    quietTemplate.resourceCountIs('AWS::SNS::Topic', 1);
    quietTemplate.resourceCountIs('AWS::SNS::Subscription', 0);
    quietTemplate.resourceCountIs('AWS::CloudWatch::Alarm', 11);
    expect(Object.keys(quietTemplate.findResources('AWS::CloudWatch::Alarm')).join()).not.toMatch(/dlq/i);
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

  it('encrypts the topic with a rotated key CloudWatch may use, and outputs its ARN', () => {
    const keyId = logicalId(stack.tenant.alarms.topic.masterKey);
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] } });
    template.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          }),
        ]),
      },
    });
    template.hasOutput('AlarmTopicArn', { Value: topicRef });
  });

  it('takes TLS publishes only, and from CloudWatch only for these alarms of this account', () => {
    const [policy] = Object.values(template.findResources('AWS::SNS::TopicPolicy'));
    const statements = policy?.Properties.PolicyDocument.Statement;
    expect(statements).toContainEqual(
      expect.objectContaining({
        Effect: 'Deny',
        Principal: '*',
        Action: 'sns:Publish',
        Condition: { Bool: { 'aws:SecureTransport': 'false' } },
      }),
    );
    const allow = statements.find((s: { Effect: string }) => s.Effect === 'Allow');
    expect(allow).toMatchObject({
      Principal: { Service: 'cloudwatch.amazonaws.com' },
      Action: 'sns:Publish',
      Resource: topicRef,
      Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
    });
    const alarmIds = Object.keys(template.findResources('AWS::CloudWatch::Alarm'));
    expect(allow.Condition.ArnEquals['aws:SourceArn']).toEqual(
      expect.arrayContaining(alarmIds.map((id) => ({ 'Fn::GetAtt': [id, 'Arn'] }))),
    );
    expect(allow.Condition.ArnEquals['aws:SourceArn']).toHaveLength(alarmIds.length);
  });
});

describe('what the functions emit', () => {
  it('watches each leaseq metric under the namespace and dimensions of the EMF document that carries it', () => {
    // As functions/api/app.ts and functions/sweep/app.ts make them.
    const api = new CapturedMetrics(metricsOptions(SERVICE.api, 'acme'));
    countFor(api, 'orders', {
      received: 3,
      redelivered: 1,
      acked: 2,
      nacked: 1,
      stale_receipts: 1,
      produced: 4,
      throttled: 1,
    });
    recordDurations(api, 'orders', 'handler_seconds', [0.2, 1.5]);
    api.publishStoredMetrics();
    const sweep = new CapturedMetrics(metricsOptions(SERVICE.sweep, 'acme'));
    // Not 0: a gauge at 0 is not published (its alarm reads silence as 0).
    publishGauges(sweep, 'orders', {
      depth: 1,
      in_flight: 1,
      delayed: 1,
      dlq_depth: 1,
      oldest_unacked_age: 1,
      dlq_oldest_age: 1,
      parked_keys: 1,
      expired_unprocessed: 1,
      dlq_expired: 1,
      drift: 1,
    });
    publishHeartbeat(sweep);
    /** Metric name → its namespace and dimensions as CloudWatch names them. */
    const emitted = new Map<string, { Namespace: string; Dimensions: { Name: string; Value: unknown }[] }>();
    for (const doc of [...api.documents, ...sweep.documents]) {
      for (const set of doc._aws.CloudWatchMetrics) {
        const names = set.Dimensions.flat();
        for (const m of set.Metrics) {
          emitted.set(m.Name, {
            Namespace: set.Namespace,
            Dimensions: names.sort().map((n) => ({ Name: n, Value: (doc as Record<string, unknown>)[n] })),
          });
        }
      }
    }
    const watched = Object.values(template.findResources('AWS::CloudWatch::Alarm'))
      .filter((a) => /^leaseq-acme\/(orders|tenant)\//.test(a.Properties.AlarmName))
      .flatMap((a) => [
        ...(a.Properties.MetricName ? [a.Properties] : []),
        ...(a.Properties.Metrics ?? []).flatMap((m: { MetricStat?: { Metric: unknown } }) =>
          m.MetricStat ? [m.MetricStat.Metric] : [],
        ),
      ])
      .filter((m) => m.Namespace === METRICS_NAMESPACE);
    expect(watched.map((m) => m.MetricName).sort()).toEqual(
      [
        'acked',
        'dlq_expired',
        // dlq-oldest-age and dlq-expiring.
        'dlq_oldest_age',
        'dlq_oldest_age',
        'drift',
        'expired_unprocessed',
        'handler_seconds',
        'nacked',
        'oldest_unacked_age',
        'produced',
        'received',
        'redelivered',
        'stale_receipts',
        'sweep_heartbeat',
        'throttled',
      ].sort(),
    );
    for (const m of watched) {
      expect(emitted.get(m.MetricName), m.MetricName).toEqual({
        Namespace: m.Namespace,
        Dimensions: m.Dimensions,
      });
    }
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
  const named = (name: string) =>
    Object.values(t.findResources('AWS::CloudWatch::Alarm', { Properties: { AlarmName: name } }))[0]
      ?.Properties;

  it('page sooner the more a queue is worth: 15 min critical, 1 h standard, never ephemeral', () => {
    expect(named('leaseq-tiers/crit/dlq-oldest-age')?.Threshold).toBe(900);
    expect(named('leaseq-tiers/std/dlq-oldest-age')?.Threshold).toBe(3600);
    expect(named('leaseq-tiers/eph/dlq-oldest-age')).toBeUndefined();
    expect(named('leaseq-tiers/crit/dlq-oldest-age')?.AlarmDescription).toMatch(/Owner: ledger-team/);
    // A day before the oldest dead letter's retention (336 h) ends, and for each that ended.
    expect(named('leaseq-tiers/std/dlq-expiring')).toMatchObject({
      MetricName: 'dlq_oldest_age',
      Threshold: 336 * 3600 - 86_400,
    });
    expect(named('leaseq-tiers/std/dlq-expired')).toMatchObject({ MetricName: 'dlq_expired', Threshold: 0 });
    expect(named('leaseq-tiers/eph/dlq-expired')).toBeUndefined();
  });

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
