import { CfnOutput, Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import type { AlarmsConfig, TenantConfig } from '../functions/core/config.js';
import { ENV } from '../functions/core/runtime-config.js';
import type { ExceptionConfig } from '../functions/core/tier-exceptions.js';
import {
  ALARM_OWNERS,
  type AlarmKind,
  alarmName,
  alarmsOf,
  backlogAgeLimitSeconds,
  EXCEPTION_EXPIRED,
  OWNER_LABEL,
  PRODUCE_ANOMALY_STD_DEVS,
} from '../functions/observability/alarm-rules.js';
import type { CounterName } from '../functions/observability/metrics.js';
import { METRICS_NAMESPACE, SERVICE } from '../functions/observability/metrics.js';
import { queueAlarms } from '../functions/observability/queue-alarms.js';
import { leaseqFunction, ownHandler } from './leaseq-function.js';
import type { LogStream, TenantQueue } from './log-stream.js';

/**
 * Powertools adds the Metrics' serviceName as a `service` dimension, and a CloudWatch metric is
 * named by all its dimensions: the tenant's produced count comes from the api function's Metrics
 * (functions/api/app.ts).
 */
const COUNTER_SERVICE = SERVICE.api;
/** Where a tenant's own alarms (not a queue's) are named: `leaseq-<tenant>/tenant/<alarm>`. */
const TENANT_ALARMS = 'tenant';

/** A stream's metrics and the sweep's function's are read over 5 minutes. */
const GAUGE_PERIOD = Duration.minutes(5);
const SWEEP_PERIOD = GAUGE_PERIOD;

export interface TenantAlarmsProps {
  tenant: TenantConfig;
  queues: Iterable<TenantQueue>;
  /** Who hears which alarms (the tenant file's `alarms`). */
  owners: AlarmsConfig;
  /** The tenant file's tier exceptions: each pages on the day it expires. */
  exceptions: readonly ExceptionConfig[];
  /** The sweep function, whose own metrics say it runs. */
  sweep: lambda.IFunction;
  /** Replaces the alarm relay's bundle, for template tests. */
  functionCode?: lambda.Code;
}

/**
 * The tenant's alarm topic (docs/alarms.md): one SNS topic, encrypted and TLS-only, that hears each
 * alarm go off and clear, and routes it to its owner. The queues' alarms are the sweep's to
 * evaluate and publish here (observability/queue-alarms.ts); CloudWatch keeps what the sweep
 * cannot watch: the sweep itself, each stream's reader and write capacity, and the tenant's
 * produce rate against its learned band.
 */
export class TenantAlarms extends Construct {
  readonly topic: sns.Topic;
  /** Hands CloudWatch's alarm changes to the topic (functions/alarm-relay). */
  readonly relay: lambda.IFunction;
  /** Every alarm, by its name (`leaseq-<tenant>/<queue>/<alarm>`). */
  readonly alarms = new Map<string, cloudwatch.Alarm>();
  private readonly tenant: string;
  private readonly action: cloudwatch.IAlarmAction;
  /** Names of the alarms that page (alarms.page hears them): set by the queues' tiers. */
  private readonly paging: string[] = [];

  constructor(scope: Construct, id: string, props: TenantAlarmsProps) {
    super(scope, id);
    this.tenant = props.tenant.tenant;
    // SNS's own key (alias/aws/sns), which bills nothing: CloudWatch cannot publish to a topic it
    // encrypts, so CloudWatch's alarms invoke the relay, which publishes as the sweep does.
    this.topic = new sns.Topic(this, 'Topic', {
      displayName: `leaseq ${this.tenant} alarms`,
      masterKey: kms.Alias.fromAliasName(this, 'SnsKey', 'alias/aws/sns'),
      enforceSSL: true,
    });
    for (const address of props.owners.email) this.topic.addSubscription(new EmailSubscription(address));
    // An owner's addresses hear only its alarms: the topic filters on the name in the alarm's message.
    for (const owner of ['consuming_team', 'platform', 'producing_team'] as const) {
      const filterPolicyWithMessageBody = {
        AlarmName: sns.FilterOrPolicy.filter(
          sns.SubscriptionFilter.stringFilter({ matchSuffixes: alarmsOf(owner).map((kind) => `/${kind}`) }),
        ),
      };
      for (const address of props.owners[owner])
        this.topic.addSubscription(new EmailSubscription(address, { filterPolicyWithMessageBody }));
    }
    this.relay = leaseqFunction(this, 'Relay', {
      entry: ownHandler('alarm-relay'),
      serviceName: 'leaseq-alarm-relay',
      memorySize: 128,
      timeout: Duration.seconds(10),
      environment: { [ENV.alarmTopicArn]: this.topic.topicArn },
      code: props.functionCode,
    });
    this.grantPublish(this.relay);
    // One permission for every alarm of the tenant (they are all named `leaseq-<tenant>/…`), where
    // LambdaAction would add one per alarm and per state.
    const stack = Stack.of(this);
    this.relay.addPermission('InvokedByAlarms', {
      principal: new iam.ServicePrincipal('lambda.alarms.cloudwatch.amazonaws.com'),
      sourceAccount: stack.account,
      sourceArn: `arn:${stack.partition}:cloudwatch:${stack.region}:${stack.account}:alarm:${alarmName(this.tenant, '*', '*').replace('/*/*', '/*')}`,
    });
    this.action = { bind: () => ({ alarmActionArn: this.relay.functionArn }) };

    // Named like the sweep's queue alarms, which the paging filter lists too.
    for (const alarm of queueAlarms(props.tenant)) if (alarm.pages) this.paging.push(alarm.name);
    const byStream = new Map<LogStream, TenantQueue[]>();
    for (const queue of props.queues) byStream.set(queue.log, [...(byStream.get(queue.log) ?? []), queue]);
    for (const queues of byStream.values()) this.addStreamAlarms(queues);
    this.addSweepAlarms(props.sweep);
    this.addProduceAnomalyAlarm();
    this.addPaging(props);

    new CfnOutput(Stack.of(this), 'AlarmTopicArn', {
      value: this.topic.topicArn,
      description: 'SNS topic of the queue alarms: subscribe a pager or chat here too',
    });
  }

  /**
   * The on-call route (alarms.page) hears what the queues' tiers page on, by the alarms' names
   * (core/tiers.ts), and each tier exception on the day it expires: a one-time EventBridge
   * schedule publishes to the topic then, so the lowered setting is looked at without a cron.
   */
  private addPaging(props: TenantAlarmsProps): void {
    const pages = [
      ...this.paging,
      ...props.exceptions.map((e) => alarmName(this.tenant, e.queue, EXCEPTION_EXPIRED)),
    ];
    if (pages.length > 0) {
      const filterPolicyWithMessageBody = {
        AlarmName: sns.FilterOrPolicy.filter(sns.SubscriptionFilter.stringFilter({ allowlist: pages })),
      };
      for (const address of props.owners.page)
        this.topic.addSubscription(new EmailSubscription(address, { filterPolicyWithMessageBody }));
    }
    if (props.exceptions.length === 0) return;
    const role = new iam.Role(this, 'ExceptionScheduleRole', {
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
      description: `leaseq-${this.tenant}: tells the alarm topic a tier exception has expired`,
    });
    this.grantPublish(role);
    props.exceptions.forEach((e, i) => {
      const name = alarmName(this.tenant, e.queue, EXCEPTION_EXPIRED);
      new scheduler.CfnSchedule(this, `ExceptionExpires${i}`, {
        description: `${name}: ${e.setting} below the ${e.queue} queue's tier standard, until ${e.expires}`,
        scheduleExpression: `at(${e.expires}T00:00:00)`,
        scheduleExpressionTimezone: 'UTC',
        flexibleTimeWindow: { mode: 'OFF' },
        target: {
          arn: this.topic.topicArn,
          roleArn: role.roleArn,
          // Shaped like an alarm's message, so the topic's name filters route it.
          input: JSON.stringify({
            AlarmName: name,
            NewStateValue: 'ALARM',
            NewStateReason:
              `The tier exception for ${e.queue}.${e.setting} (${e.owner}: ${e.reason}) expired on ${e.expires}: ` +
              'restore the setting to its tier standard, or renew the exception; synth refuses it until then.',
          }),
        },
      });
    });
  }

  /**
   * The sweep, by its function's own metrics (free, where a heartbeat of its own billed $0.30 a
   * month): an EventBridge tick invokes it every minute, so no invocation for 15 minutes means it
   * stopped; and an invocation fails when a pass or its gauges did, so errors that last mean
   * retries, lease expiries and the queues' alarms have stopped with them.
   */
  private addSweepAlarms(sweep: lambda.IFunction): void {
    this.add(TENANT_ALARMS, 'sweep-silent', {
      alarmDescription:
        "The sweep has not run for 15 minutes: nothing retries, expires leases or evaluates the queues' alarms. See the sweep function's throttles and its schedule (EventBridge rule SweepSchedule).",
      metric: sweep.metricInvocations({ statistic: cloudwatch.Stats.SUM, period: SWEEP_PERIOD }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: 3,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });
    this.add(TENANT_ALARMS, 'sweep-failing', {
      alarmDescription:
        "The sweep's invocations have failed in each of three 5-minute periods: its passes or its gauges (and with them the queues' alarms) fail. See the sweep function's log for the error.",
      metric: sweep.metricErrors({ statistic: cloudwatch.Stats.SUM, period: SWEEP_PERIOD }),
      threshold: 0,
      evaluationPeriods: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  /**
   * A stream's reader and its write capacity, once per stream: on a shared stream they are every
   * queue's, named after the stream (`leaseq-<tenant>/<stream>/…`: a Kinesis name holds a `_`, no
   * queue's does), on a queue's own stream after the queue as before.
   */
  private addStreamAlarms(queues: readonly TenantQueue[]): void {
    const [first] = queues;
    if (!first) return;
    const { config } = first;
    const label = config.shared_stream ? config.stream : first.name;
    const what = config.shared_stream
      ? `the stream ${config.stream} (queues ${queues.map((q) => q.name).join(', ')})`
      : `${first.name}'s stream`;
    const backlogLimit = backlogAgeLimitSeconds(config);
    this.add(label, 'iterator-age', {
      alarmDescription:
        `The oldest record of ${what} not yet read by its consumer is over ${backlogLimit / 3600} h ` +
        'old, half the retention (records past it are lost); or nothing has read the stream for 15 minutes.',
      metric: first.stream.metricGetRecordsIteratorAgeMilliseconds({
        statistic: cloudwatch.Stats.MAXIMUM,
        period: GAUGE_PERIOD,
      }),
      threshold: backlogLimit * 1000,
      evaluationPeriods: 3,
      // The event source mapping calls GetRecords every second even at the tip (age 0): no data
      // means its reader is gone or stuck, and the records age towards expiry unseen.
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });
    this.add(label, 'write-throttled', {
      alarmDescription:
        `Produce met the write limit of ${what}, ${config.shards} shard(s) (1 MiB or 1,000 records ` +
        'a second each) in two 5-minute periods running: produce retries and slows. `leaseq size` ' +
        'says how many shards the rate needs.',
      // A burst that one retry absorbs is not capacity missing: throttling that lasts is.
      metric: first.stream.metricWriteProvisionedThroughputExceeded({
        statistic: cloudwatch.Stats.SUM,
        period: GAUGE_PERIOD,
      }),
      threshold: 0,
      evaluationPeriods: 2,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  /** Publishing to the topic (SNS's own key admits every principal of the account, through SNS). */
  grantPublish(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['sns:Publish'], resources: [this.topic.topicArn] }),
    );
  }

  /**
   * A tenant's produce rate above its learned band (CloudWatch anomaly detection): the platform's,
   * since one tenant's surge is every tenant's in the account's Kinesis, Lambda and DynamoDB limits.
   */
  private addProduceAnomalyAlarm(): void {
    this.register(
      TENANT_ALARMS,
      'produce-rate-anomaly',
      new cloudwatch.AnomalyDetectionAlarm(this, 'tenant-produce-rate-anomaly', {
        ...this.named(
          TENANT_ALARMS,
          'produce-rate-anomaly',
          `Messages produced to the tenant's queues rose above ${PRODUCE_ANOMALY_STD_DEVS} standard deviations ` +
            'of their usual band (CloudWatch anomaly detection on the produced count) for 10 minutes. Find the ' +
            'queue (stats produced_total, usage) and the producer (audit, API key), check the queue keeps up ' +
            '(stats drain), and set rate_limits if it should not.',
        ),
        metric: new cloudwatch.Metric({
          namespace: METRICS_NAMESPACE,
          metricName: 'produced' satisfies CounterName,
          dimensionsMap: { service: COUNTER_SERVICE, tenant: this.tenant },
          statistic: cloudwatch.Stats.SUM,
          period: GAUGE_PERIOD,
        }),
        stdDevs: PRODUCE_ANOMALY_STD_DEVS,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_UPPER_THRESHOLD,
        evaluationPeriods: 2,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
  }

  private add(
    queue: string,
    alarm: AlarmKind,
    {
      pages,
      ...props
    }: Omit<cloudwatch.AlarmProps, 'alarmName' | 'alarmDescription'> & {
      alarmDescription: string;
      /** alarms.page hears it too. */
      pages?: boolean;
    },
  ): void {
    if (pages) this.paging.push(alarmName(this.tenant, queue, alarm));
    this.register(
      queue,
      alarm,
      new cloudwatch.Alarm(this, `${queue}-${alarm}`, {
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        ...props,
        ...this.named(queue, alarm, props.alarmDescription),
      }),
    );
  }

  /** Name and description (its owner first) of an alarm. */
  private named(queue: string, alarm: AlarmKind, description: string) {
    return {
      alarmName: alarmName(this.tenant, queue, alarm),
      alarmDescription: `${OWNER_LABEL[ALARM_OWNERS[alarm]]}: ${description}`,
    };
  }

  private register(queue: string, alarm: AlarmKind, created: cloudwatch.Alarm): void {
    const name = alarmName(this.tenant, queue, alarm);
    // Cleared too, so the owner knows without looking.
    created.addAlarmAction(this.action);
    created.addOkAction(this.action);
    this.alarms.set(name, created);
  }
}
