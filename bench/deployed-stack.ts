import * as lambda from 'aws-cdk-lib/aws-lambda';
import { parseTenantConfig } from '../functions/core/config.js';
import { buildApp } from '../infra/build-app.js';
import { DEPLOYMENT, PRICES } from './prices.js';

/**
 * What a tenant's stack costs a month with no messages, read from the stack as deployed: the
 * CloudFormation template `cdk synth` makes of a tenant file (infra/build-app.ts, with inline code
 * for the functions: the bundles do not change what bills), each resource that bills while idle
 * priced with bench/prices.ts. The sweep publishes no custom metrics: its gauges are log lines,
 * written only while one is not zero (functions/sweep/gauges.ts).
 *
 * What runs (the sweep's tick, an idle worker) is measured, not read here: bench/cost.ts adds it.
 */

export interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
}

export interface Template {
  Resources: Record<string, TemplateResource>;
}

/** One line of a stack's idle bill: a kind of resource, how many, what they cost. */
export interface IdleItem {
  item: string;
  /** The resources (or metrics) the line counts. */
  count: number;
  usdPerMonth: number;
  note: string;
}

export interface DeployedTenant {
  tenant: string;
  queues: number;
  /** The stack's resources by type, as the template has them. */
  resourceTypes: Record<string, number>;
  items: IdleItem[];
  /** Resource types neither priced nor known to be free idle: the reading needs a look (empty when sound). */
  unclassified: string[];
  usdPerMonth: number;
}

/**
 * Resource types that cost nothing while no message moves (the bill of their use is in the
 * per-message figures, or in the measured sweep tick and idle worker).
 */
export const FREE_IDLE: Readonly<Record<string, string>> = {
  'AWS::DynamoDB::Table':
    'on demand: requests only; storage and point-in-time recovery by the GB held (≈ 0 empty)',
  'AWS::S3::Bucket': 'by the GB held and requests (none with no messages)',
  'AWS::S3::BucketPolicy': 'free',
  'AWS::ApiGatewayV2::Api': 'by requests and connection minutes',
  'AWS::ApiGatewayV2::Stage': 'free (no cache on HTTP/WebSocket APIs)',
  'AWS::ApiGatewayV2::Integration': 'free',
  'AWS::ApiGatewayV2::Route': 'free',
  'AWS::ApiGatewayV2::RouteResponse': 'free',
  'AWS::Lambda::Function': 'by invocations and duration (the sweep tick is measured apart)',
  'AWS::Lambda::Permission': 'free',
  'AWS::Lambda::EventSourceMapping': "Kinesis and DynamoDB stream polling by Lambda's mappings is free",
  'AWS::Lambda::EventInvokeConfig': 'free',
  'AWS::Events::Rule': 'scheduled rules on the default bus are free',
  'AWS::SNS::Topic': 'by messages published (none while no alarm fires)',
  'AWS::SNS::TopicPolicy': 'free',
  'AWS::SNS::Subscription': 'by deliveries',
  'AWS::Logs::LogGroup':
    'by the GB ingested and stored: nothing idle (the gauges write a line only while one is not zero)',
  'AWS::IAM::Role': 'free',
  'AWS::IAM::Policy': 'free',
  'AWS::KMS::Alias': 'free',
  'Custom::LeaseqBusyFanOut':
    'invokes the sweep on stack changes only; the consumer it releases bills while a stream is busy (a per-message cost)',
  'AWS::CDK::Metadata': 'free',
};

const HOURS = DEPLOYMENT.hoursPerMonth;

/** Resource types with a monthly fee while idle, each read into its line. */
const BILLED: Readonly<Record<string, (resources: TemplateResource[], template: Template) => IdleItem[]>> = {
  'AWS::Kinesis::Stream': kinesisStreams,
  'AWS::Kinesis::StreamConsumer': fanOutConsumers,
  'AWS::KMS::Key': (keys) => [kmsKeys(keys, 'KMS customer managed keys')],
  'AWS::KMS::ReplicaKey': (keys) => [kmsKeys(keys, 'KMS replica keys')],
  'AWS::CloudWatch::Alarm': alarms,
  'AWS::CloudWatch::CompositeAlarm': (composite) => [
    {
      item: 'CloudWatch composite alarms',
      count: composite.length,
      usdPerMonth: composite.length * PRICES.cloudwatchCompositeAlarm.usd,
      note: `$${PRICES.cloudwatchCompositeAlarm.usd} each`,
    },
  ],
  'AWS::SecretsManager::Secret': (secrets) => [
    {
      item: 'Secrets Manager secrets',
      count: secrets.length,
      usdPerMonth: secrets.length * PRICES.secretsManagerSecret.usd,
      note: `$${PRICES.secretsManagerSecret.usd} each`,
    },
  ],
  'AWS::CloudWatch::Dashboard': (dashboards) => [
    {
      item: 'CloudWatch dashboards',
      count: dashboards.length,
      usdPerMonth: dashboards.length * PRICES.cloudwatchDashboard.usd,
      note: `$${PRICES.cloudwatchDashboard.usd} each; an account's first three are free, not counted here`,
    },
  ],
};

function kinesisStreams(streams: TemplateResource[]): IdleItem[] {
  let shards = 0;
  let extendedShards = 0;
  let onDemand = 0;
  const retention: number[] = [];
  for (const s of streams) {
    const p = s.Properties ?? {};
    const mode = (p.StreamModeDetails as { StreamMode?: string } | undefined)?.StreamMode ?? 'PROVISIONED';
    const hours = Number(p.RetentionPeriodHours ?? 24);
    retention.push(hours);
    if (mode === 'ON_DEMAND') {
      // Retention past 24 h bills by the GB stored: nothing with no messages.
      onDemand++;
      continue;
    }
    const n = Number(p.ShardCount ?? 1);
    shards += n;
    if (hours > 24) extendedShards += n;
  }
  const provisioned = streams.length - onDemand;
  return [
    {
      item: 'Kinesis shard-hours',
      count: shards,
      usdPerMonth: shards * HOURS * PRICES.kinesisShardHour.usd,
      note: `${provisioned} provisioned stream${provisioned === 1 ? '' : 's'}, ${shards} shard${shards === 1 ? '' : 's'} × ${HOURS} h`,
    },
    {
      item: 'Kinesis extended retention',
      count: extendedShards,
      usdPerMonth: extendedShards * HOURS * PRICES.kinesisExtendedRetentionShardHour.usd,
      note: `retention ${[...new Set(retention)].join(', ')} h${extendedShards ? '' : ': 24 h is free'}`,
    },
    ...(onDemand
      ? [
          {
            item: 'Kinesis on-demand stream-hours',
            count: onDemand,
            usdPerMonth: onDemand * HOURS * PRICES.kinesisOnDemandStreamHour.usd,
            note: `${onDemand} × ${HOURS} h`,
          },
        ]
      : []),
  ];
}

/** An enhanced fan-out consumer bills each shard of its stream by the hour, as a shard does. */
function fanOutConsumers(consumers: TemplateResource[], template: Template): IdleItem[] {
  let consumerShards = 0;
  for (const c of consumers) {
    const arn = c.Properties?.StreamARN as { 'Fn::GetAtt'?: [string, string] } | undefined;
    const stream = template.Resources[arn?.['Fn::GetAtt']?.[0] ?? ''];
    if (!stream) throw new Error(`stream consumer of a stream not in the template: ${JSON.stringify(arn)}`);
    consumerShards += Number(stream.Properties?.ShardCount ?? 1);
  }
  return [
    {
      item: 'Kinesis enhanced fan-out',
      count: consumerShards,
      usdPerMonth: consumerShards * HOURS * PRICES.kinesisFanOutConsumerShardHour.usd,
      note: `${consumers.length} consumer${consumers.length === 1 ? '' : 's'}, ${consumerShards} consumer-shard${consumerShards === 1 ? '' : 's'} × ${HOURS} h (and $${PRICES.kinesisFanOutRetrievalGb.usd} a GB pushed)`,
    },
  ];
}

function kmsKeys(keys: TemplateResource[], item: string): IdleItem {
  const rotated = keys.filter((k) => k.Properties?.EnableKeyRotation === true).length;
  return {
    item,
    count: keys.length,
    usdPerMonth: keys.length * PRICES.kmsKey.usd,
    note:
      `$${PRICES.kmsKey.usd} each` +
      (rotated
        ? `; ${rotated} rotated yearly: +$1 a rotation for the first two (≤ $3 a key from year 3)`
        : ''),
  };
}

interface AlarmMetric {
  Expression?: string;
  MetricStat?: { Period?: number };
}

/**
 * CloudWatch bills an alarm by the metrics it watches: one for a single metric, each MetricStat of
 * a metric-math alarm, three for an anomaly-detection band (the metric and its two bounds);
 * at the high-resolution rate when its period is under a minute.
 */
export function alarmMetrics(alarm: TemplateResource): { metrics: number; highResolution: boolean } {
  const p = alarm.Properties ?? {};
  const math = p.Metrics as AlarmMetric[] | undefined;
  if (!math) return { metrics: 1, highResolution: Number(p.Period ?? 60) < 60 };
  const stats = math.filter((m) => m.MetricStat);
  const highResolution = stats.some((m) => Number(m.MetricStat?.Period ?? 60) < 60);
  const bands = math.filter((m) => m.Expression?.includes('ANOMALY_DETECTION_BAND')).length;
  return { metrics: bands ? 3 * bands : stats.length, highResolution };
}

/** What an alarm watches and when it fires, its name and actions aside: two alike are one alarm billed twice. */
function sameWatch(alarm: TemplateResource): string {
  const { AlarmName, AlarmDescription, AlarmActions, OKActions, Tags, ...watch } = alarm.Properties ?? {};
  return JSON.stringify(watch);
}

function alarms(resources: TemplateResource[]): IdleItem[] {
  let standard = 0;
  let high = 0;
  let anomaly = 0;
  let math = 0;
  const watches = new Map<string, number>();
  for (const a of resources) {
    const { metrics, highResolution } = alarmMetrics(a);
    if (highResolution) high += metrics;
    else standard += metrics;
    const expressions = (a.Properties?.Metrics as AlarmMetric[] | undefined)?.filter((m) => m.Expression);
    if (expressions?.some((m) => m.Expression?.includes('ANOMALY_DETECTION_BAND'))) anomaly++;
    else if (expressions?.length) math++;
    const key = sameWatch(a);
    watches.set(key, (watches.get(key) ?? 0) + 1);
  }
  const repeats = [...watches.values()].reduce((n, c) => n + c - 1, 0);
  const usd =
    standard * PRICES.cloudwatchAlarmMetric.usd + high * PRICES.cloudwatchHighResolutionAlarmMetric.usd;
  return [
    {
      item: 'CloudWatch alarms (by alarm metric)',
      count: resources.length,
      usdPerMonth: usd,
      note:
        `${standard + high} alarm metrics (${anomaly} anomaly × 3, ${math} metric math by MetricStat)` +
        ` × $${PRICES.cloudwatchAlarmMetric.usd}${high ? `; ${high} high resolution` : ''}` +
        (repeats ? `; ${repeats} repeat another alarm's metric and rule` : ''),
    },
  ];
}

/** Reads a template's idle bill: one or more lines per billed resource type, and what it could not place. */
export function readTemplate(template: Template): {
  items: IdleItem[];
  resourceTypes: Record<string, number>;
  unclassified: string[];
} {
  const byType = new Map<string, TemplateResource[]>();
  for (const r of Object.values(template.Resources)) byType.set(r.Type, [...(byType.get(r.Type) ?? []), r]);
  const items: IdleItem[] = [];
  const unclassified: string[] = [];
  for (const [type, resources] of [...byType].sort(([a], [b]) => a.localeCompare(b))) {
    const read = BILLED[type];
    if (read) items.push(...read(resources, template));
    else if (!(type in FREE_IDLE)) unclassified.push(type);
  }
  const resourceTypes = Object.fromEntries([...byType].map(([type, rs]) => [type, rs.length]));
  return { items, resourceTypes, unclassified };
}

/** A tenant of `queues` queues with every default, as synth accepts it (standard tier: an owner, a page). */
export function benchTenantFile(queues: number): unknown {
  const names = queues === 1 ? ['work'] : Array.from({ length: queues }, (_, i) => `q${i}`);
  return {
    tenant: queues === 1 ? 'bench-one' : `bench-${queues}`,
    queues: Object.fromEntries(names.map((name) => [name, { owner: 'bench-team' }])),
    alarms: { page: ['oncall@example.com'] },
  };
}

/** The CloudFormation template `cdk synth` makes of a tenant file (cdk-nag runs as it does there). */
export function synthTemplate(tenantFile: unknown): Template {
  const { app, stack } = buildApp(tenantFile, {
    functionCode: lambda.Code.fromInline('exports.handler=async()=>{}'),
  });
  return app.synth().getStackArtifact(stack.artifactId).template as Template;
}

/** A tenant file's stack, synthesized and priced idle. */
export async function deployedTenant(
  tenantFile: unknown,
  template = synthTemplate(tenantFile),
): Promise<DeployedTenant> {
  const config = parseTenantConfig(tenantFile, 'bench tenant');
  const queues = Object.keys(config.queues).length;
  const read = readTemplate(template);
  const items = read.items;
  return {
    tenant: config.tenant,
    queues,
    resourceTypes: read.resourceTypes,
    items,
    unclassified: read.unclassified,
    usdPerMonth: items.reduce((a, i) => a + i.usdPerMonth, 0),
  };
}

/** The two tenants the goals price idle (bench/goals.ts): queues synthesized, idle pull workers beside. */
export const FIXED_TENANTS = {
  oneQueue: { queues: 1, workers: 0 },
  tenQueues: { queues: 10, workers: 2 },
} as const;

export type FixedTenant = keyof typeof FIXED_TENANTS;

/** Both goal tenants' stacks, synthesized and priced idle (some seconds each: cdk synth with cdk-nag). */
export async function deployedTenants(): Promise<Record<FixedTenant, DeployedTenant>> {
  return {
    oneQueue: await deployedTenant(benchTenantFile(FIXED_TENANTS.oneQueue.queues)),
    tenQueues: await deployedTenant(benchTenantFile(FIXED_TENANTS.tenQueues.queues)),
  };
}
