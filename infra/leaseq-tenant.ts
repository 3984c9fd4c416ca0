import { resolve } from 'node:path';
import { Annotations, CfnOutput, CustomResource, Duration, RemovalPolicy, Stack, Tags } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as cxapi from 'aws-cdk-lib/cx-api';
import { Construct } from 'constructs';
import type { z } from 'zod';
import {
  consumerNamespace,
  type TenantConfig,
  tableName,
  type tenantConfigSchema,
  tenantStreams,
} from '../functions/core/config.js';
import { gatewayThrottles } from '../functions/core/gateway-throttles.js';
import { waitingReceivesFindings } from '../functions/core/long-polls.js';
import { checkPayloadSchemas } from '../functions/core/payload-schema.js';
import { ENV } from '../functions/core/runtime-config.js';
import type { exceptionSchema } from '../functions/core/tier-exceptions.js';
import { SERVICE } from '../functions/observability/metrics.js';
import { GSI1, SWEEP_ARM_KEY } from '../functions/store/keys.js';
import { TenantAlarms } from './alarms.js';
import {
  grantClaimObjects,
  grantClaimReads,
  grantSecretSealing,
  grantSegments,
  grantTableDescribe,
  grantTableItems,
  grantTableStreamRead,
} from './grants.js';
import { type LeaseqFunctionProps, leaseqFunction, ownHandler } from './leaseq-function.js';
import { LogStream, TenantQueue } from './log-stream.js';
import { acknowledgeNag, arnFinding } from './nag.js';
import { loadTenantFile, parseTenantFile, refuseTierFindings } from './tenant-file.js';
import { WakeChannelApi } from './wake-channel.js';

/** A tenant file's content, as `tenants/<name>.json` holds it (defaults not yet applied). */
export type LeaseqTenantConfig = z.input<typeof tenantConfigSchema> & {
  exceptions?: z.input<typeof exceptionSchema>[];
};

export interface LeaseqTenantProps {
  /** The tenant's config: queues, API keys, consumers, alarms. Give this or `tenantFile`. */
  tenant?: LeaseqTenantConfig;
  /** The path of a tenant file, from `projectRoot` (its `"schema": "<file>"` paths resolve beside it). */
  tenantFile?: string;
  /** The directory consumer `entry` paths (and `tenantFile`) resolve from. Default `process.cwd()`, the CDK app's. */
  projectRoot?: string;
  /** Names the config in validation errors. Default `tenantFile`, or `tenant config`. */
  source?: string;
  /** Replaces the esbuild bundle of every function, for template tests; leave unset to deploy. */
  functionCode?: lambda.Code;
}

/** A function added to the tenant: it gets the runtime environment; grants stay with the caller. */
export type TenantFunctionProps = Omit<LeaseqFunctionProps, 'environment' | 'code'> & {
  /** Added to the runtime environment. */
  environment?: Record<string, string>;
};

const projectRootOf = (props: LeaseqTenantProps) => resolve(props.projectRoot ?? process.cwd());

/** The tenant file as given, or read from `tenantFile`; exactly one of them. */
function tenantFileOf(props: LeaseqTenantProps, projectRoot: string): { raw: unknown; source: string } {
  if ((props.tenant === undefined) === (props.tenantFile === undefined))
    throw new Error('LeaseqTenant: give either `tenant` (a config object) or `tenantFile` (its path)');
  if (props.tenantFile !== undefined) {
    const source = props.source ?? props.tenantFile;
    return { raw: loadTenantFile(resolve(projectRoot, props.tenantFile), source), source };
  }
  return { raw: props.tenant, source: props.source ?? 'tenant config' };
}

/**
 * The tenant file as the functions get it: without the alarm owners and the tier exceptions, which
 * only the stack reads.
 * Lambda's environment holds 4 KB in all, and the functions have no use for the addresses.
 */
export function withoutStackOnlyFields(tenantFile: unknown): unknown {
  if (typeof tenantFile !== 'object' || tenantFile === null) return tenantFile;
  const { alarms: _owners, exceptions: _exceptions, ...rest } = tenantFile as Record<string, unknown>;
  return rest;
}

/** Days a server access log of the claims bucket is kept. */
const ACCESS_LOG_DAYS = 90;

/**
 * One tenant's cell: its streams, table, bucket, API and functions, shared with no other tenant.
 * A team adds it to a stack of its own CDK app; `cdk deploy -c tenant=<name>` (infra/app.ts) puts
 * one in a stack of its own. The config is checked as `npm start` checks it (ConfigError).
 */
export class LeaseqTenant extends Construct {
  readonly config: TenantConfig;
  readonly table: dynamodb.Table;
  readonly bucket: s3.Bucket;
  /** Server access logs of `bucket`: who read or wrote which claim-checked payload. */
  readonly accessLogsBucket: s3.Bucket;
  readonly queues: ReadonlyMap<string, TenantQueue>;
  /** Each stream of the log by its name, and the queues it carries. */
  readonly streams: ReadonlyMap<string, LogStream>;
  readonly apiFunction: nodejs.NodejsFunction;
  readonly dispatchFunction: nodejs.NodejsFunction;
  readonly sweepFunction: nodejs.NodejsFunction;
  /** The tenant file's Lambda consumers, by `<queue>~<consumer>`. */
  readonly consumerFunctions: ReadonlyMap<string, nodejs.NodejsFunction>;
  readonly httpApi: apigw.HttpApi;
  /** The wake channel: a WebSocket API on which Workers wait for their queues' admissions. */
  readonly channel: WakeChannelApi;
  /** The alarm topic that tells the tenant's owners, and the alarms CloudWatch evaluates. */
  readonly alarms: TenantAlarms;
  /**
   * Seals the secrets of SQS credentials in the table; only the api function may use it. Made only
   * for a tenant file with `"sqs_credentials": true`: a key bills $1 a month.
   */
  readonly secretsKey?: kms.Key;
  private readonly runtimeEnvironment: Record<string, string>;
  /** The tenant file every function bundles (less what only the stack reads). */
  readonly tenantConfig: string;
  private readonly functionCode: lambda.Code | undefined;

  /** Where consumer `entry` paths resolve from. */
  private readonly projectRoot: string;

  constructor(scope: Construct, id: string, props: LeaseqTenantProps) {
    super(scope, id);
    // Log delivery is allowed by the logs bucket's policy (scoped to the claims bucket), not by
    // the legacy log-delivery ACL. Set here, before any child, as the app may set no flags.
    this.node.setContext(cxapi.S3_SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, true);
    this.projectRoot = projectRootOf(props);
    const { raw, source } = tenantFileOf(props, this.projectRoot);
    const file = parseTenantFile(raw, source);
    const { config } = file;
    checkPayloadSchemas(config, source);
    refuseTierFindings(file, source);
    this.config = config;
    this.functionCode = props.functionCode;
    Tags.of(this).add('leaseq:tenant', config.tenant);

    this.table = new dynamodb.Table(this, 'Table', {
      tableName: tableName(config.tenant),
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: 'ttl',
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // It holds every queue's state: a critical queue's tier keeps it from being deleted by mistake.
      deletionProtection: Object.values(config.queues).some((q) => q.tier === 'critical'),
      // Its records wake a resting sweep when the sweep's arm is written (createSweep).
      stream: dynamodb.StreamViewType.KEYS_ONLY,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // Message state items by state and shard (ready, leased, delayed, dead; keys.ts). Receive and
    // the sweep read the items from the index itself, so it carries them whole (they stay < 1 KB).
    this.table.addGlobalSecondaryIndex({
      indexName: GSI1,
      partitionKey: { name: 'gsi1pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'gsi1sk', type: dynamodb.AttributeType.STRING },
      projectionType: dynamodb.ProjectionType.ALL,
    });

    // The claims bucket's server access logs. It is not logged itself: it holds nothing else, and
    // cdk-nag's S1 accepts a bucket that is another's log target.
    this.accessLogsBucket = new s3.Bucket(this, 'AccessLogsBucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      // S3 delivers server access logs only to a bucket encrypted with SSE-S3.
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      // Kept with the stack's data when the stack is deleted: it is the record of who read it.
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(ACCESS_LOG_DAYS) }],
    });

    this.bucket = new s3.Bucket(this, 'Bucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      versioned: false,
      removalPolicy: RemovalPolicy.RETAIN,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'claims-bucket/',
      lifecycleRules: [
        // A claim-checked payload is referenced by the DLQ copy too, so it lives as long as that.
        ...Object.entries(config.queues).map(([queue, q]) => ({
          id: `claims-${queue}`,
          prefix: `claims/${queue}/`,
          expiration: Duration.days(Math.ceil(q.dlq_retention_hours / 24)),
        })),
        // A segment is read until every entry of it is finished and its retries, which point at
        // its payload, are done: the retention, then every attempt's last lease and longest backoff.
        ...Object.entries(config.queues).map(([queue, q]) => ({
          id: `segments-${queue}`,
          prefix: `segments/${queue}/`,
          expiration: Duration.days(
            Math.ceil(
              (q.retention_hours * 3600 +
                q.max_attempts * (q.max_lease_seconds + Math.max(...q.backoff_seconds))) /
                86_400,
            ),
          ),
        })),
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
    });

    this.streams = new Map(
      [...tenantStreams(config)].map(([streamName, s]) => {
        // A queue's own stream keeps the construct path (and so the logical id) it always had.
        const id = s.shared ? `Stream-${streamName}` : `Queue-${s.queues[0]}`;
        return [
          streamName,
          new LogStream(this, id, {
            streamName,
            shards: s.shards,
            retentionHours: s.retention_hours,
            fanOut: s.fan_out === 'always',
            queues: s.queues,
          }),
        ];
      }),
    );
    this.queues = new Map(
      Object.entries(config.queues).map(([name, q]) => [
        name,
        new TenantQueue(name, q, this.streams.get(q.stream) as LogStream),
      ]),
    );

    // The tenant file travels in the bundles, not the environment (runtime-config.ts).
    this.tenantConfig = JSON.stringify(withoutStackOnlyFields(raw));
    this.channel = new WakeChannelApi(this, 'WakeChannel', { tenant: config.tenant });
    this.runtimeEnvironment = {
      [ENV.table]: this.table.tableName,
      [ENV.bucket]: this.bucket.bucketName,
      [ENV.channelEndpoint]: this.channel.endpoint,
    };

    // Sealed secrets are credentials, made again with POST /keys/{name}/sqs-credentials: the key
    // goes with the stack (after KMS's shortest wait) rather than costing a month's fee forever.
    if (config.sqs_credentials)
      this.secretsKey = new kms.Key(this, 'SecretsKey', {
        description: `leaseq-${config.tenant}: seals the secrets of SQS credentials`,
        enableKeyRotation: true,
        removalPolicy: RemovalPolicy.DESTROY,
        pendingWindow: Duration.days(7),
      });

    this.apiFunction = this.addFunction('Api', {
      entry: ownHandler('api'),
      serviceName: SERVICE.api,
      memorySize: 512,
      // API Gateway gives up on the integration at 29 s (receive long-polls up to 20 s).
      timeout: Duration.seconds(29),
      environment: this.secretsKey ? { [ENV.secretsKeyId]: this.secretsKey.keyArn } : {},
      bundleConsole: true,
    });
    if (this.secretsKey) grantSecretSealing(this.secretsKey, this.apiFunction);
    grantTableItems(this.table, this.apiFunction);
    grantClaimObjects(this.bucket, this.apiFunction);
    grantSegments(this.bucket, this.apiFunction, 'read');
    for (const log of this.streams.values()) log.grantProduce(this.apiFunction);

    this.httpApi = this.createHttpApi();
    this.channel.route(this.apiFunction);
    this.dispatchFunction = this.createDispatch();
    this.sweepFunction = this.createSweep();
    // Whoever admits wakes the receivers waiting on the channel: produce's fast path, dispatch, the sweep's retries.
    for (const fn of [this.apiFunction, this.dispatchFunction, this.sweepFunction])
      this.channel.grantWake(fn);
    this.consumerFunctions = this.createConsumers();
    this.alarms = new TenantAlarms(this, 'Alarms', {
      tenant: config,
      sweep: this.sweepFunction,
      queues: this.queues.values(),
      owners: config.alarms,
      exceptions: file.exceptions,
      functionCode: this.functionCode,
    });
    // The sweep evaluates the queues' alarms and tells the topic of their changes.
    this.sweepFunction.addEnvironment(ENV.alarmTopicArn, this.alarms.topic.topicArn);
    this.alarms.grantPublish(this.sweepFunction);
    this.switchBusyFanOut(config);

    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'BucketName', { value: this.bucket.bucketName });
    new CfnOutput(this, 'DispatchFunctionName', { value: this.dispatchFunction.functionName });
    new CfnOutput(this, 'SweepFunctionName', { value: this.sweepFunction.functionName });
  }

  /**
   * Imports each consumer module of `props`' config and checks its handler was made by
   * leaseqConsumer() for the queue and consumer declared, as `npm start` does, with its message.
   * Asynchronous, so not part of the constructor: an app awaits it before `new LeaseqTenant`,
   * which bundles the modules (TypeScript ones need the app run by tsx or ts-node).
   */
  static async checkConsumers(props: LeaseqTenantProps): Promise<void> {
    const projectRoot = projectRootOf(props);
    const { raw, source } = tenantFileOf(props, projectRoot);
    // Imported here: it loads the consumer middleware, which synthesis alone does not need.
    const { importConsumers } = await import('./consumer-modules.js');
    await importConsumers(parseTenantFile(raw, source).config, projectRoot);
  }

  /** A leaseq function with the tenant's runtime environment (ENV in runtime-config.ts). */
  addFunction(id: string, props: TenantFunctionProps): nodejs.NodejsFunction {
    return leaseqFunction(this, id, {
      ...props,
      environment: { ...this.runtimeEnvironment, ...props.environment },
      tenantConfig: this.tenantConfig,
      code: this.functionCode,
    });
  }

  /** Admits every queue's records into its shard's lease window, one mapping per stream. */
  private createDispatch(): nodejs.NodejsFunction {
    const fn = this.addFunction('Dispatch', {
      entry: ownHandler('dispatch'),
      serviceName: SERVICE.dispatch,
      memorySize: 512,
      timeout: Duration.seconds(60),
    });
    grantTableItems(this.table, fn);
    grantSegments(this.bucket, fn, 'write');
    for (const queue of this.queues.values()) {
      // A queue with Lambda consumers is theirs (push): dispatch does not admit it. A shared
      // stream has one mapping, whatever the queues on it.
      if (queue.config.consumers.length === 0 && !fn.node.tryFindChild(queue.log.node.id))
        queue.log.subscribe(fn);
    }
    return fn;
  }

  /**
   * Each declared Lambda consumer: its entry bundled like leaseq's own functions, fed by its
   * queue's stream. It writes its own message state and segments and reads claim-checked payloads;
   * it needs no PutRecords, since the sweep puts its retries back into the stream.
   */
  private createConsumers(): Map<string, nodejs.NodejsFunction> {
    const fns = new Map<string, nodejs.NodejsFunction>();
    for (const queue of this.queues.values()) {
      for (const c of queue.config.consumers) {
        const namespace = consumerNamespace(queue.name, c.name);
        const fn = this.addFunction(`Consumer-${namespace}`, {
          entry: resolve(this.projectRoot, c.entry),
          handler: c.handler,
          serviceName: `leaseq-consumer-${queue.name}-${c.name}`,
          memorySize: c.memory_mb,
          timeout: Duration.seconds(c.timeout_seconds),
          environment: { [ENV.consumerName]: c.name },
        });
        grantTableItems(this.table, fn);
        grantClaimReads(this.bucket, fn, queue.name);
        // A consumer admits its batches into the lease layer: it writes their segments.
        grantSegments(this.bucket, fn, 'read-write');
        queue.log.subscribe(fn, {
          batchSize: c.batch_size,
          maxBatchingWindow: Duration.seconds(c.max_batching_window_seconds),
        });
        fns.set(namespace, fn);
      }
    }
    return fns;
  }

  /**
   * Streams on `fan_out: "when_busy"` (functions/core/fan-out-switch.ts): the sweep registers
   * their consumer and maps dispatch to it at run time, outside CloudFormation, so a resource of
   * the stack has a function of its own release them (functions/fan-out-release) before a stream
   * leaves `when_busy` or the stack is deleted: Kinesis refuses to delete a stream that has a
   * consumer.
   */
  private switchBusyFanOut(config: TenantConfig): void {
    const busy = [...tenantStreams(config)]
      .filter(([, s]) => s.fan_out === 'when_busy')
      .map(([name]) => name);
    if (!busy.length) return;
    const dispatch = this.dispatchFunction;
    const release = leaseqFunction(this, 'FanOutRelease', {
      entry: ownHandler('fan-out-release'),
      serviceName: 'leaseq-fan-out-release',
      memorySize: 128,
      // Deregistering a consumer takes seconds; the release waits for it before it answers.
      timeout: Duration.minutes(5),
      environment: { [ENV.dispatchFunction]: dispatch.functionName },
      code: this.functionCode,
    });
    this.sweepFunction.addEnvironment(ENV.dispatchFunction, dispatch.functionName);
    const logs = busy.map((name) => this.streams.get(name) as LogStream);
    for (const fn of [this.sweepFunction, release]) this.grantFanOutSwitch(fn, logs);
    for (const log of logs) log.grantBusyPush(dispatch);
    const resource = new CustomResource(this, 'BusyFanOut', {
      serviceToken: release.functionArn,
      resourceType: 'Custom::LeaseqBusyFanOut',
      properties: { Streams: busy },
    });
    // Deleted before the streams and dispatch it releases, after what fires the sweep, which
    // would switch a busy stream on again.
    for (const log of logs) resource.node.addDependency(log);
    resource.node.addDependency(dispatch);
    this.node.findChild('SweepSchedule').node.addDependency(resource);
    this.sweepFunction.node.findChild('SweepWake').node.addDependency(resource);
    acknowledgeNag(dispatch.role?.node.tryFindChild('DefaultPolicy') ?? dispatch, {
      id: 'AwsSolutions-IAM5',
      reason:
        "Dispatch is pushed through the consumer the sweep registers on a busy stream at run time, whose ARN ends in its creation time: the wildcard stays under this stack's own streams.",
      appliesTo: logs.map((log) => arnFinding(log.stream, '/consumer/*')),
    });
  }

  /** What switches busy-time fan-out: the streams' consumer, and dispatch's mappings on it. */
  private grantFanOutSwitch(fn: lambda.Function, logs: readonly LogStream[]): void {
    for (const log of logs) log.grantConsumerSwitch(fn);
    const stack = Stack.of(this);
    const mappings = `arn:${stack.partition}:lambda:${stack.region}:${stack.account}:event-source-mapping:*`;
    const onDispatch = { StringEquals: { 'lambda:FunctionArn': this.dispatchFunction.functionArn } };
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['lambda:CreateEventSourceMapping'],
        resources: ['*'],
        conditions: onDispatch,
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['lambda:ListEventSourceMappings'], resources: ['*'] }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['lambda:DeleteEventSourceMapping'],
        resources: [mappings],
        conditions: onDispatch,
      }),
    );
    acknowledgeNag(fn.role?.node.tryFindChild('DefaultPolicy') ?? fn, {
      id: 'AwsSolutions-IAM5',
      reason:
        "A busy stream's consumer and dispatch's mapping on it are made at run time: the consumer " +
        "wildcard stays under this stack's own streams, the mappings' under dispatch (a condition " +
        'on its ARN), and listing mappings has no resource to name.',
      appliesTo: [
        ...logs.map((log) => arnFinding(log.stream, '/consumer/*')),
        'Resource::*',
        'Resource::arn:<AWS::Partition>:lambda:<AWS::Region>:<AWS::AccountId>:event-source-mapping:*',
      ],
    });
  }

  /**
   * Requeues due delayed messages and expires leases; it polls inside each minute's invocation
   * until it may rest (functions/core/sweep-rest.ts), and its arm's writes wake it.
   */
  private createSweep(): nodejs.NodejsFunction {
    const fn = this.addFunction('Sweep', {
      entry: ownHandler('sweep'),
      serviceName: SERVICE.sweep,
      memorySize: 512,
      // The handler keeps making passes until about 5 s are left, so one invocation spans the minute.
      timeout: Duration.seconds(60),
      // Two sweeps at once would race for the same due messages and expired leases.
      reservedConcurrentExecutions: 1,
    });
    grantTableItems(this.table, fn);
    grantTableDescribe(this.table, fn);
    grantSegments(this.bucket, fn, 'read');
    for (const log of this.streams.values()) log.grantProduce(fn);
    // A tick that cannot start (the previous sweep still running) or that fails is dropped, not
    // queued for later: the next tick is a minute away and would only find the concurrency taken.
    fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
    new events.Rule(this, 'SweepSchedule', {
      schedule: events.Schedule.rate(Duration.minutes(1)),
      targets: [new targets.LambdaFunction(fn, { retryAttempts: 0 })],
    });
    // The arm's writes, filtered out of the table's stream: Lambda polls a stream for its triggers
    // and filters it at no charge. A wake that meets a running sweep is retried for a minute at
    // most: the running one does not rest within 40 s of the arm anyway.
    const wake = fn.addEventSourceMapping('SweepWake', {
      eventSourceArn: this.table.tableStreamArn,
      startingPosition: lambda.StartingPosition.LATEST,
      batchSize: 100,
      retryAttempts: 2,
      maxRecordAge: Duration.minutes(1),
      filters: [lambda.FilterCriteria.filter({ dynamodb: { Keys: { pk: { S: [SWEEP_ARM_KEY.pk] } } } })],
    });
    grantTableStreamRead(this.table, fn).applyBefore(wake);
    return fn;
  }

  private createHttpApi(): apigw.HttpApi {
    const integration = new HttpLambdaIntegration('ApiIntegration', this.apiFunction, {
      payloadFormatVersion: apigw.PayloadFormatVersion.VERSION_2_0,
    });
    // The default stage is made below, because the one HttpApi creates takes no throttling.
    const api = new apigw.HttpApi(this, 'HttpApi', {
      apiName: `leaseq-${this.config.tenant}`,
      createDefaultStage: false,
    });
    const routes = api.addRoutes({ path: '/{proxy+}', methods: [apigw.HttpMethod.ANY], integration });
    // Each queue's routes, throttled apart (core/gateway-throttles.ts): API Gateway picks the most
    // specific route, so these take the queue's requests from `/{proxy+}`.
    const throttles = gatewayThrottles(this.config);
    for (const finding of throttles.findings)
      Annotations.of(this).addWarningV2('leaseq:gateway-throttle', finding);
    for (const finding of waitingReceivesFindings(this.config))
      Annotations.of(this).addWarningV2('leaseq:waiting-receives', finding);
    const queueRoutes = throttles.routes.flatMap((route) => {
      const [method, path] = route.routeKey.split(' ') as [string, string];
      return api.addRoutes({ path, methods: [method as apigw.HttpMethod], integration });
    });
    const health = api.addRoutes({ path: '/health', methods: [apigw.HttpMethod.GET], integration });
    // The SQS-compatible endpoint: the SDKs post every action to the endpoint's root.
    const sqs = api.addRoutes({ path: '/', methods: [apigw.HttpMethod.POST], integration });
    acknowledgeRoutes(
      sqs,
      'POST / is the SQS-compatible endpoint: the api function verifies the AWS Signature ' +
        'Version 4 of every request against SQS credentials of an API key (functions/access/' +
        "sigv4-verifier.ts, 403 otherwise) and checks that key's scopes. API Gateway's IAM " +
        "authorizer would need AWS IAM identities, which tenants' SQS clients do not have.",
    );
    acknowledgeRoutes(
      [...routes, ...queueRoutes],
      'The api function authenticates every /queues and /keys request itself: the bearer API ' +
        "key's SHA-256 is looked up among the tenant file's keys and the keys made at run time " +
        '(functions/api/route.ts, 401 otherwise), then its scope produce|consume|admin:<queue> ' +
        'is checked against the queue of the route (403). A Lambda authorizer would repeat only ' +
        'the lookup, as a second invocation per request or a cache that outlives a revoked key.',
    );
    acknowledgeRoutes(
      health,
      'GET /health is unauthenticated by contract (docs/contract.md: no scope), so load balancers and ' +
        'uptime checks can call it without a key; it answers {"status":"ok"} and reads no data.',
    );

    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', { retention: logs.RetentionDays.ONE_MONTH });
    const stage = api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      // The default route settings: each route without its own throttle has this one, apart.
      throttle: { burstLimit: throttles.others.burst, rateLimit: throttles.others.rate },
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(accessLogs),
        // JSON with HTTP API variables only (CDK's default CLF format uses REST-only ones).
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            time: '$context.requestTimeEpoch',
            method: '$context.httpMethod',
            path: '$context.path',
            status: '$context.status',
            responseLength: '$context.responseLength',
            latency: '$context.responseLatency',
            integrationLatency: '$context.integrationLatency',
            integrationError: '$context.integrationErrorMessage',
            error: '$context.error.message',
          }),
        ),
      },
    });
    const cfnStage = stage.node.defaultChild as apigw.CfnStage;
    cfnStage.routeSettings = Object.fromEntries(
      throttles.routes.map((r) => [
        r.routeKey,
        { ThrottlingRateLimit: r.rate, ThrottlingBurstLimit: r.burst },
      ]),
    );
    // CloudFormation refuses route settings that name a route not made yet.
    for (const route of queueRoutes) cfnStage.node.addDependency(route);
    new CfnOutput(this, 'ApiUrl', { value: stage.url });
    return api;
  }
}

/** Each route's API Gateway authorization finding, acknowledged with why the function does it. */
function acknowledgeRoutes(routes: apigw.HttpRoute[], reason: string): void {
  for (const route of routes)
    acknowledgeNag(route.node.defaultChild as Construct, { id: 'AwsSolutions-APIG4', reason });
}
