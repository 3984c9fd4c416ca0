import { CfnOutput, Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { type AlarmsConfig, consumerNamespace, namespaceParts } from '../functions/core/config.js';
import type { ExceptionConfig } from '../functions/core/tier-exceptions.js';
import { TIER_STANDARDS } from '../functions/core/tiers.js';
import type { CounterName, DurationName, GaugeName } from '../functions/observability/metrics.js';
import { METRICS_NAMESPACE, SERVICE, SWEEP_HEARTBEAT } from '../functions/observability/metrics.js';
import {
  ALARM_OWNERS,
  type AlarmKind,
  alarmName,
  alarmsOf,
  backlogAgeLimitSeconds,
  dlqExpiringSeconds,
  EXCEPTION_EXPIRED,
  ORDERED_STALL_SECONDS,
  OWNER_LABEL,
  PRODUCE_ANOMALY_STD_DEVS,
  REDELIVERY_EXPRESSION,
  REDELIVERY_PERCENT,
  STALE_RECEIPT_EXPRESSION,
  STALE_RECEIPT_PERCENT,
} from './alarm-rules.js';
import type { LogStream, TenantQueue } from './log-stream.js';

/**
 * Powertools adds the Metrics' serviceName as a `service` dimension beside `queue`, and a
 * CloudWatch metric is named by all its dimensions: counters come from the api function's Metrics,
 * gauges from the sweep's (functions/api/app.ts, functions/sweep/app.ts).
 */
const COUNTER_SERVICE = SERVICE.api;
const GAUGE_SERVICE = SERVICE.sweep;
/** Where a tenant's own alarms (not a queue's) are named: `leaseq-<tenant>/tenant/<alarm>`. */
const TENANT_ALARMS = 'tenant';

/** The sweep publishes gauges about once a minute, sometimes two apart: 5 min always holds one. */
const GAUGE_PERIOD = Duration.minutes(5);
const HANDLER_PERCENTILE = 'p99';

const CLOUDWATCH = new iam.ServicePrincipal('cloudwatch.amazonaws.com');

export interface TenantAlarmsProps {
  tenant: string;
  queues: Iterable<TenantQueue>;
  /** Who hears which alarms (the tenant file's `alarms`). */
  owners: AlarmsConfig;
  /** The tenant file's tier exceptions: each pages on the day it expires. */
  exceptions: readonly ExceptionConfig[];
  /**
   * The tenant's key, which encrypts the topic: CloudWatch may use it only under the encryption
   * context SNS gives this stack's topics, so nothing else the key seals is open to it.
   */
  key: kms.Key;
}

/**
 * The alarms (docs/alarms.md) for every queue of a tenant, and their owner: one SNS topic, encrypted and
 * TLS-only, that each alarm notifies when it goes off and when it clears.
 */
export class TenantAlarms extends Construct {
  readonly topic: sns.Topic;
  /** Every alarm, by its name (`leaseq-<tenant>/<queue>/<alarm>`). */
  readonly alarms = new Map<string, cloudwatch.Alarm>();
  private readonly tenant: string;
  private readonly action: SnsAction;
  /** Names of the alarms that page (alarms.page hears them): set by the queues' tiers. */
  private readonly paging: string[] = [];

  constructor(scope: Construct, id: string, props: TenantAlarmsProps) {
    super(scope, id);
    this.tenant = props.tenant;
    // A customer managed key: the AWS managed aws/sns key cannot admit CloudWatch, which has to
    // encrypt what it publishes to the topic. SNS names the topic in the encryption context; the
    // topic's name is CloudFormation's, `<stack>-…`, and its ARN cannot be named here (the topic
    // names the key).
    const key = props.key;
    const stack = Stack.of(this);
    const context = {
      'kms:EncryptionContext:aws:sns:topicArn': `arn:${stack.partition}:sns:${stack.region}:${stack.account}:${stack.stackName}-*`,
    };
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [CLOUDWATCH],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: { StringLike: context, StringEquals: { 'aws:SourceAccount': stack.account } },
      }),
    );
    this.topic = new sns.Topic(this, 'Topic', {
      displayName: `leaseq ${props.tenant} alarms`,
      masterKey: key,
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
    this.action = new SnsAction(this.topic);

    const byStream = new Map<LogStream, TenantQueue[]>();
    for (const queue of props.queues) {
      this.addQueueAlarms(queue);
      byStream.set(queue.log, [...(byStream.get(queue.log) ?? []), queue]);
    }
    for (const queues of byStream.values()) this.addStreamAlarms(queues);
    this.addSweepAlarm();
    this.addPaging(props, key);

    // The topic policy replaces SNS's default one, so CloudWatch is admitted here, for these alarms only.
    this.topic.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [CLOUDWATCH],
        actions: ['sns:Publish'],
        resources: [this.topic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': Stack.of(this).account },
          ArnEquals: { 'aws:SourceArn': [...this.alarms.values()].map((a) => a.alarmArn) },
        },
      }),
    );
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
  private addPaging(props: TenantAlarmsProps, key: kms.Key): void {
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
    role.addToPolicy(new iam.PolicyStatement({ actions: ['sns:Publish'], resources: [this.topic.topicArn] }));
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: [key.keyArn],
        conditions: { StringEquals: { 'kms:EncryptionContext:aws:sns:topicArn': this.topic.topicArn } },
      }),
    );
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

  private addQueueAlarms(queue: TenantQueue): void {
    const q = queue.name;
    const tier = TIER_STANDARDS[queue.config.tier];
    const backlogLimit = backlogAgeLimitSeconds(queue.config);
    // Push queues are consumed by their Lambda consumers, never by receive: their consumers count.
    if (queue.config.consumers.length === 0) {
      this.addRedeliveryAlarm(q, COUNTER_SERVICE, 'consumers');
      this.addStaleReceiptAlarm(q);
      this.addHandlerDurationAlarm(
        q,
        COUNTER_SERVICE,
        queue.config.lease_seconds,
        'receive and ack (lease_seconds)',
      );
    }
    this.add(q, 'oldest-unacked-age', {
      alarmDescription:
        `The oldest message of ${q} not yet acked has waited over ${backlogLimit / 3600} h, half its ` +
        'retention.',
      metric: this.gauge(q, 'oldest_unacked_age'),
      threshold: backlogLimit,
      evaluationPeriods: 3,
      // The sweep publishes it only while not 0 (a metric bills by the hour it is published in);
      // a sweep that stopped is the tenant's sweep-silent alarm's to report.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const dlqAge = tier.dlqAgeAlarmSeconds;
    // An ephemeral queue's dead letters page nobody: its tier accepts losing them.
    if (dlqAge !== undefined)
      this.add(q, 'dlq-oldest-age', {
        alarmDescription:
          `A dead letter of ${q} has waited over ${minutes(dlqAge)}: redrive it or purge it ` +
          `(GET /queues/${q}/dlq). Owner: ${queue.config.owner ?? 'none named'}.`,
        metric: this.gauge(q, 'dlq_oldest_age'),
        threshold: dlqAge,
        evaluationPeriods: 1,
        // A silent sweep is the oldest-unacked-age alarm's to report, once.
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        pages: true,
      });
    if (dlqAge !== undefined) this.addDlqExpiryAlarms(q, queue.config.dlq_retention_hours);
    // Each Lambda consumer has a DLQ of its own (its namespace), with an owner too.
    for (const consumer of queue.config.consumers) {
      const ns = consumerNamespace(q, consumer.name);
      this.addRedeliveryAlarm(ns, SERVICE.consumer, `its Lambda consumer ${consumer.name}`);
      this.addHandlerDurationAlarm(
        ns,
        SERVICE.consumer,
        consumer.timeout_seconds,
        'an invocation (timeout_seconds)',
      );
      if (dlqAge !== undefined)
        this.add(ns, 'dlq-oldest-age', {
          alarmDescription:
            `A dead letter of ${q}'s Lambda consumer ${consumer.name} has waited over ` +
            `${minutes(dlqAge)}: redrive it or purge it (GET /queues/${q}/dlq?consumer=${consumer.name}).`,
          metric: this.gauge(ns, 'dlq_oldest_age'),
          threshold: dlqAge,
          evaluationPeriods: 1,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
          pages: true,
        });
      if (dlqAge !== undefined) this.addDlqExpiryAlarms(ns, queue.config.dlq_retention_hours);
    }
    if (queue.config.ordered) this.addOrderedAlarms(queue);
    this.addNoisyProducerAlarms(q);
    this.add(q, 'expired-unprocessed', {
      alarmDescription: `Records of ${q} expired from its stream before they were admitted: messages were lost.`,
      metric: this.gauge(q, 'expired_unprocessed'),
      threshold: 0,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      // On a critical queue a lost message is an incident.
      pages: tier.expiredPages,
    });
    this.add(q, 'drift', {
      alarmDescription:
        `A durability setting of ${q}'s stream or of the table is below what the stack set (the ` +
        "sweep's log names it): redeploy, or restore it by hand, before a loss it would not cover.",
      metric: this.gauge(q, 'drift'),
      threshold: 0,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      pages: queue.config.tier === 'critical',
    });
  }

  /**
   * The sweep publishes its heartbeat with every gauge pass, about once a minute: silence means it
   * stopped, and with it retries, lease expiries and every gauge the queues' alarms read.
   */
  private addSweepAlarm(): void {
    this.add(TENANT_ALARMS, 'sweep-silent', {
      alarmDescription:
        "The sweep has published no heartbeat for 15 minutes: nothing retries, expires leases or publishes the queues' gauges (their alarms are silent too). See the sweep function's errors and throttles.",
      metric: new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName: SWEEP_HEARTBEAT,
        dimensionsMap: { service: GAUGE_SERVICE, tenant: this.tenant },
        statistic: cloudwatch.Stats.SUM,
        period: GAUGE_PERIOD,
      }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: 3,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
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

  /**
   * A dead letter must not leave unseen: a day before the oldest one's retention ends (extend it,
   * or redrive), and for each that did (`dlq_expired`). Both page: an owned tier's dead letters
   * are somebody's lost messages.
   */
  private addDlqExpiryAlarms(q: string, retentionHours: number): void {
    const expiring = dlqExpiringSeconds({ dlq_retention_hours: retentionHours });
    if (expiring !== undefined)
      this.add(q, 'dlq-expiring', {
        alarmDescription:
          `The oldest dead letter of ${q} leaves its DLQ within a day (retention ${retentionHours} h): ` +
          'redrive it, or raise dlq_retention_hours before it goes.',
        metric: this.gauge(q, 'dlq_oldest_age'),
        threshold: expiring,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        pages: true,
      });
    this.add(q, 'dlq-expired', {
      alarmDescription: `Dead letters of ${q} reached the end of their DLQ retention unhandled: they are gone.`,
      metric: this.gauge(q, 'dlq_expired'),
      threshold: 0,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      pages: true,
    });
  }

  /**
   * An ordered queue's keys wait behind their heads: a stall shows within minutes, long before
   * half the retention, and a parked key holds its later messages until its owner acts.
   */
  private addOrderedAlarms(queue: TenantQueue): void {
    const q = queue.name;
    // Each reader of the queue: the queue itself (pull), or each of its Lambda consumers.
    const readers = queue.config.consumers.length
      ? queue.config.consumers.map((c) => ({
          ns: consumerNamespace(q, c.name),
          where: `${q}'s Lambda consumer ${c.name}`,
          query: `?consumer=${c.name}`,
        }))
      : [{ ns: q, where: `the ordered queue ${q}`, query: '' }];
    for (const { ns, where, query } of readers)
      this.add(ns, 'ordered-stall', {
        alarmDescription:
          `A shard of ${where} has not moved past its oldest unfinished message for over ` +
          `${ORDERED_STALL_SECONDS / 60} minutes: its key's later messages (its shard's too, in a Lambda ` +
          `consumer's batches) wait behind it. Trace it (GET /queues/${q}/messages/{id}${query}), see the ` +
          `parked keys (GET /queues/${q}/keys/parked${query}) and stats' commit_stalled_seconds_by_shard.`,
        metric: this.gauge(ns, 'commit_stalled_seconds'),
        threshold: ORDERED_STALL_SECONDS,
        evaluationPeriods: 1,
        // A silent sweep is the oldest-unacked-age alarm's to report.
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    const parked = (ns: string, where: string) =>
      this.add(ns, 'parked-keys', {
        alarmDescription:
          `A key of ${where} is parked behind its dead letter; its later ` +
          `messages are held until the dead letter is redriven or the key skipped (GET /queues/${q}/keys/parked` +
          `${ns === q ? '' : `?consumer=${namespaceParts(ns).consumer}`}).`,
        metric: this.gauge(ns, 'parked_keys'),
        threshold: 0,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    if (queue.config.consumers.length === 0) parked(q, `the ordered queue ${q}`);
    for (const consumer of queue.config.consumers)
      parked(consumerNamespace(q, consumer.name), `${q}'s Lambda consumer ${consumer.name}`);
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

  /** Counted by the api for a pulled queue, by the consumer itself for a consumer's namespace. */
  private addRedeliveryAlarm(q: string, service: string, who: string): void {
    this.add(q, 'redelivery-rate', {
      alarmDescription:
        `More than ${REDELIVERY_PERCENT} % of the messages delivered from ${q} were redeliveries for ` +
        `2 minutes: ${who} failing, nacking or letting leases expire.`,
      metric: new cloudwatch.MathExpression({
        expression: REDELIVERY_EXPRESSION,
        usingMetrics: {
          received: this.counter(q, 'received', service),
          redelivered: this.counter(q, 'redelivered', service),
        },
        label: 'redelivered / received (%)',
        period: Duration.minutes(1),
      }),
      threshold: REDELIVERY_PERCENT,
      evaluationPeriods: 2,
      // No deliveries, no counters: an idle queue redelivers nothing.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  /**
   * A noisy tenant: produce refused over the queue's quota (the producers', who set
   * their pace), and a produce rate above its learned band (the platform's: one tenant's surge
   * is every tenant's in the shared account's Kinesis, Lambda and DynamoDB limits).
   */
  private addNoisyProducerAlarms(q: string): void {
    this.add(q, 'quota-throttled', {
      alarmDescription:
        `Requests to ${q} were refused over its quota (429 QUOTA_EXCEEDED: rate_limits, or the storage ` +
        'quota while consumers fall behind) in the last 5 minutes. Slow the producers (honour Retry-After), ' +
        'or raise the quota in the tenant file.',
      metric: this.counter(q, 'throttled', COUNTER_SERVICE).with({ period: GAUGE_PERIOD }),
      threshold: 0,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.register(
      q,
      'produce-rate-anomaly',
      new cloudwatch.AnomalyDetectionAlarm(this, `${q}-produce-rate-anomaly`, {
        ...this.named(
          q,
          'produce-rate-anomaly',
          `Messages produced to ${q} rose above ${PRODUCE_ANOMALY_STD_DEVS} standard deviations of their ` +
            'usual band (CloudWatch anomaly detection on the produced count) for 10 minutes. Find the producer ' +
            '(audit, API key), check the queue keeps up (stats drain), and set rate_limits if it should not.',
        ),
        metric: this.counter(q, 'produced', COUNTER_SERVICE).with({ period: GAUGE_PERIOD }),
        stdDevs: PRODUCE_ANOMALY_STD_DEVS,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_UPPER_THRESHOLD,
        evaluationPeriods: 2,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
  }

  /** Pull queues only: a Lambda consumer's deliveries carry no receipts. */
  private addStaleReceiptAlarm(q: string): void {
    this.add(q, 'stale-receipt-rate', {
      alarmDescription:
        `More than ${STALE_RECEIPT_PERCENT} % of the receipts sent back to ${q} ` +
        '(ack, nack, extend) were stale for 2 minutes: handlers finish after their lease ran out, so ' +
        'their messages run twice. Extend leases while handling (heartbeats) or raise lease_seconds.',
      metric: new cloudwatch.MathExpression({
        expression: STALE_RECEIPT_EXPRESSION,
        usingMetrics: {
          acked: this.counter(q, 'acked', COUNTER_SERVICE),
          nacked: this.counter(q, 'nacked', COUNTER_SERVICE),
          stale: this.counter(q, 'stale_receipts', COUNTER_SERVICE),
        },
        label: 'stale / receipts sent back (%)',
        period: Duration.minutes(1),
      }),
      threshold: STALE_RECEIPT_PERCENT,
      evaluationPeriods: 2,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  /**
   * A redelivery storm's warning: handlers running close to their lease (a pull
   * delivery until its ack or nack, a Lambda consumer's call) will soon outlive it, and every
   * message they hold comes back as a redelivery.
   */
  private addHandlerDurationAlarm(q: string, service: string, leaseSeconds: number, lease: string): void {
    this.add(q, 'handler-duration', {
      alarmDescription:
        `The p99 handler time of ${q} passed half the lease between ${lease}, ` +
        `${leaseSeconds / 2} s, over 5 minutes: handlers are slowing towards expired leases and redeliveries. ` +
        'Look at what the handler waits on; extend leases (heartbeats) or raise the lease.',
      metric: new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName: 'handler_seconds' satisfies DurationName,
        dimensionsMap: { service, tenant: this.tenant, queue: q },
        statistic: HANDLER_PERCENTILE,
        period: GAUGE_PERIOD,
      }),
      threshold: leaseSeconds / 2,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  private counter(queue: string, name: CounterName, service: string): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRICS_NAMESPACE,
      metricName: name,
      dimensionsMap: { service, tenant: this.tenant, queue },
      statistic: cloudwatch.Stats.SUM,
      period: Duration.minutes(1),
    });
  }

  private gauge(queue: string, name: GaugeName): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRICS_NAMESPACE,
      metricName: name,
      dimensionsMap: { service: GAUGE_SERVICE, tenant: this.tenant, queue },
      statistic: cloudwatch.Stats.MAXIMUM,
      period: GAUGE_PERIOD,
    });
  }
}

/** `15 min`, `1 h`: an alarm's age threshold as its description says it. */
function minutes(seconds: number): string {
  return seconds % 3600 === 0 ? `${seconds / 3600} h` : `${seconds / 60} min`;
}
