import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { z } from 'zod';
import { secretBoxFor } from '../../functions/access/secret-box.js';
import {
  ACCESS_KEY_ID,
  newAccessKeyId,
  newSecretAccessKey,
  SECRET_ACCESS_KEY,
  SqsCredentialIssuer,
  type SqsCredentials,
} from '../../functions/access/sqs-credentials.js';
import { type ApiHandler, createApiHandler } from '../../functions/api/app.js';
import { type AwsClients, createClients } from '../../functions/aws/clients.js';
import type { FaultInjector } from '../../functions/aws/faults.js';
import { hashApiKey } from '../../functions/core/auth.js';
import {
  SHARD_READS_PER_SECOND,
  type TenantConfig,
  tableName,
  tenantStreams,
} from '../../functions/core/config.js';
import type { FanOutSwitch } from '../../functions/core/fan-out-switch.js';
import { gatewayThrottles } from '../../functions/core/gateway-throttles.js';
import { checkPayloadSchemas } from '../../functions/core/payload-schema.js';
import { MAX_STREAM_SHARDS } from '../../functions/core/reshard-plan.js';
import type { RuntimeConfig } from '../../functions/core/runtime-config.js';
import { createDispatchHandler } from '../../functions/dispatch/app.js';
import { SERVICE } from '../../functions/observability/metrics.js';
import { SqsCredentialStore } from '../../functions/store/sqs-credentials.js';
import { createSweepHandler } from '../../functions/sweep/app.js';
import { localConsoleAssets } from '../console-assets.js';
import { createAdminClients } from './admin-clients.js';
import { startChannelGateway } from './channel-gateway.js';
import { consumerMappings } from './consumers.js';
import { type DynamoDbEmulator, FAN_OUT_PATH, startEmulators } from './emulators.js';
import { type EventSource, startEventSource } from './event-source.js';
import { LocalFanOutSwitch } from './fan-out-switch.js';
import { startGateway } from './http-gateway.js';
import { repairIndex } from './index-repair.js';
import { ensureResources } from './resources.js';
import { type Schedule, startSchedule } from './schedule.js';
import { lockDataDir } from './startup-checks.js';

/**
 * The embedded default: the same handlers as on AWS, with the emulators playing DynamoDB,
 * Kinesis and S3, and this process playing API Gateway.
 */

export interface RuntimeOptions {
  tenant: TenantConfig;
  dataDir: string;
  /** 0 picks a free port. */
  port: number;
  /** The local admin key; when absent, one is generated and kept in the data folder. */
  adminKey?: string;
  faults?: FaultInjector;
  logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  /** How often the sweep makes a pass (on AWS: every second inside a once-a-minute invocation). */
  sweepIntervalMs?: number;
  /** The sweep's schedule, which a resting sweep waits for unless armed (default a minute, as on AWS). */
  sweepTickMs?: number;
  /** How often the sweep publishes the gauges and samples the totals (default a minute, as on AWS). */
  gaugeIntervalMs?: number;
  /** How long an idle shard poller waits before reading again. */
  idlePollMs?: number;
  /**
   * Whether the sweep switches busy-time fan-out (default); the bench switches a run's stream
   * itself, so that only the stream it measures has a busy mapping polling beside it.
   */
  sweepSwitchesFanOut?: boolean;
  /**
   * Wake the shard pollers after each produce and sweep re-append (default), which AWS's mapping
   * does not: the bench turns it off so its figures are at AWS's cadence.
   */
  wakePollers?: boolean;
  /**
   * Each request as if in a Lambda instance of its own: no admission wakes or hands leases to a
   * long poll of this process (RuntimeConfig.requestsIsolated). The bench's `--as-aws` mode.
   */
  requestsIsolated?: boolean;
  /**
   * API Gateway's throttles, per queue route as the stack declares them (default); the bench's
   * throughput runs turn them off, as they measure the lease layer past one route's default.
   */
  gatewayThrottles?: boolean;
  /** dynalite (default) or AWS's DynamoDB Local (needs Java). */
  dynamodb?: DynamoDbEmulator;
}

export interface Runtime {
  url: string;
  /** The wake channel's WebSocket URL (docs/wake-channel.md). */
  channelUrl: string;
  adminKey: string;
  /**
   * SQS credentials of the admin key (kept in the data folder), to sign SQS requests with: a
   * tenant file with `"sqs_credentials": true` only, as on AWS.
   */
  sqsCredentials?: SqsCredentials;
  config: RuntimeConfig;
  /** Clients of the runtime itself (metered), for tools and tests that inspect state. */
  clients: AwsClients;
  endpoints: { dynamodb: string; kinesis: string; s3: string };
  eventSource: EventSource;
  sweep: Schedule;
  /** Busy-time fan-out's switch, where a stream is on `when_busy` (core/fan-out-switch.ts). */
  fanOut?: FanOutSwitch;
  close(): Promise<void>;
}

export const ADMIN_KEY_NAME = 'local-admin';

/** The running runtime's emulator endpoints, in its data folder. */
export const ENDPOINTS_FILE = 'endpoints.json';

export async function startRuntime(options: RuntimeOptions): Promise<Runtime> {
  // A schema that does not compile must refuse to start, not fail every produce.
  checkPayloadSchemas(options.tenant);
  mkdirSync(options.dataDir, { recursive: true });
  const unlock = lockDataDir(options.dataDir);
  try {
    return await startOn(options, unlock);
  } catch (err) {
    unlock();
    throw err;
  }
}

async function startOn(options: RuntimeOptions, unlock: () => void): Promise<Runtime> {
  const adminKey = options.adminKey ?? loadOrCreateAdminKey(options.dataDir);
  const sqs = options.tenant.sqs_credentials;
  const secretsKey = sqs ? loadOrCreateSecretsKey(options.dataDir) : undefined;
  const sqsCredentials = sqs ? loadOrCreateSqsCredentials(options.dataDir) : undefined;
  const streams = tenantStreams(options.tenant);
  const totalShards = [...streams.values()].reduce((n, s) => n + s.shards, 0);
  const emulators = await startEmulators({
    dataDir: options.dataDir,
    // Room for `leaseq reshard` and a reshard at start (kinesalite counts open shards only).
    shardLimit: Math.max(MAX_STREAM_SHARDS, totalShards * 2),
    dynamodb: options.dynamodb ?? 'dynalite',
    // As AWS runs it, a shard's readers (dispatch, produce's passes, the sweep) share its reads.
    ...(options.requestsIsolated ? { readsPerShard: SHARD_READS_PER_SECOND } : {}),
  });
  // Where `leaseq reshard` finds the emulators (their ports change with every start).
  writeFileSync(join(options.dataDir, ENDPOINTS_FILE), `${JSON.stringify(emulators.endpoints)}\n`);
  // Before the config, which names its endpoint; it reaches the api function once that is built.
  let api: ApiHandler | undefined;
  const channel = await startChannelGateway(() => {
    if (!api) throw new Error('the api function is not built yet');
    return api.channel;
  }, channelPort(options.port)).catch(async (err) => {
    await emulators.close();
    throw err;
  });
  const config: RuntimeConfig = {
    tenant: options.tenant,
    tableName: tableName(options.tenant.tenant),
    bucketName: `leaseq-${options.tenant.tenant}-local`,
    region: 'us-east-1',
    endpoints: emulators.endpoints,
    extraKeys: [
      { name: ADMIN_KEY_NAME, sha256: hashApiKey(adminKey), scopes: ['produce:*', 'consume:*', 'admin:*'] },
    ],
    ...(secretsKey ? { secrets: { kind: 'local', key: secretsKey } } : {}),
    admissionsInProcess: options.requestsIsolated !== true,
    requestsIsolated: options.requestsIsolated === true,
    // The table's stream wakes the sweep on AWS; here the arm's writer does.
    onSweepArmed: () => sweep?.wake(),
    channelEndpoint: channel.endpoint,
  };
  let sweep: Schedule | undefined;
  const clients = createClients({
    region: config.region,
    endpoints: {
      ...emulators.endpoints,
      // What the mappings of streams on enhanced fan-out read with (event-source.ts, fanOut).
      ...([...streams.values()].some((s) => s.fan_out !== 'off')
        ? { kinesisFanOut: `${emulators.endpoints.kinesis}${FAN_OUT_PATH}` }
        : {}),
    },
    faults: options.faults,
    channelEndpoint: channel.endpoint,
  });
  try {
    const admin = createAdminClients(emulators.endpoints, config.region);
    await ensureResources(clients, admin, options.tenant, {
      table: config.tableName,
      bucket: config.bucketName,
      // dynalite has no TTL; DynamoDB Local deletes expired items within seconds (AWS: within days).
      ttl: emulators.dynamodb === 'dynamodb-local',
    }).finally(() => admin.destroy());
    // DynamoDB Local writes an item and its index entries in one SQLite transaction.
    if (emulators.dynamodb === 'dynalite') {
      const suspects = emulators.unsettledWrites
        ?.filter((w) => w.table === config.tableName)
        .map((w) => w.key);
      await repairIndex(clients, config.tableName, suspects);
      emulators.indexRepaired(config.tableName);
    }
    // Sealed again at every start, so a new secrets key (its file deleted) does not strand them.
    if (sqsCredentials)
      await new SqsCredentialIssuer(
        new SqsCredentialStore(clients.doc, config.tableName),
        secretBoxFor(config),
      ).register({ name: ADMIN_KEY_NAME, kind: 'fixed' }, sqsCredentials, 'leaseq-local');
    const logger = (serviceName: string) => new Logger({ serviceName, logLevel: options.logLevel ?? 'WARN' });
    const log = logger('leaseq-local');
    const wake = options.wakePollers ?? true;
    const dispatch = createDispatchHandler(config, clients, logger(SERVICE.dispatch));
    const eventSource = await startEventSource({
      kinesis: clients.kinesis,
      ...(clients.fanOutKinesis ? { fanOutKinesis: clients.fanOutKinesis } : {}),
      region: config.region,
      checkpointDir: join(options.dataDir, 'checkpoints'),
      idlePollMs: options.idlePollMs ?? 100,
      mappings: [
        // A queue with Lambda consumers is theirs (push): dispatch does not admit it.
        ...[...streams]
          .filter(([, s]) => s.queues.every((q) => options.tenant.queues[q]?.consumers.length === 0))
          .map(([stream, s]) => ({
            // A queue's own stream keeps the name its checkpoints were saved under.
            functionName: `dispatch-${stream.replace(`leaseq-${options.tenant.tenant}-`, '')}`,
            streamName: stream,
            handler: dispatch,
            batchSize: 100,
            fanOut: s.fan_out === 'always',
          })),
        ...(await consumerMappings(config, clients, logger)),
      ],
      onError: (err, info) => log.warn('event source error', { ...info, error: String(err) }),
    });
    const fanOut = [...streams.values()].some((s) => s.fan_out === 'when_busy')
      ? new LocalFanOutSwitch(eventSource, dispatch)
      : undefined;
    const sweepHandler = createSweepHandler(
      config,
      clients,
      {
        // An invocation here is one pass: the gauges finish beside the next ones.
        awaitGauges: false,
        ...(options.gaugeIntervalMs !== undefined ? { gaugeIntervalMs: options.gaugeIntervalMs } : {}),
        ...(fanOut && options.sweepSwitchesFanOut !== false ? { fanOut } : {}),
      },
      logger(SERVICE.sweep),
    );
    const schedule = startSchedule(
      'sweep',
      async (event, context) => {
        const report = await sweepHandler(event, context);
        if (wake && (report.requeued || report.redriven)) eventSource.nudge();
        return report;
      },
      { intervalMs: options.sweepIntervalMs ?? 1000, tickMs: options.sweepTickMs ?? 60_000 },
      (err) => log.warn('sweep failed', { error: String(err), stack: (err as Error).stack }),
    );
    sweep = schedule;
    // The console's files come from a build here, where AWS's api bundle carries them.
    const http = createApiHandler(config, clients, logger(SERVICE.api), undefined, localConsoleAssets);
    api = http;
    // Wake the shard pollers after a produce, so local delivery does not wait for the next poll.
    const gateway = await startGateway(
      async (event, context) => {
        const result = await http(event, context);
        if (wake && event.requestContext.http.method === 'POST' && event.rawPath.endsWith('/messages'))
          eventSource.nudge();
        return result;
      },
      options.port,
      options.gatewayThrottles === false ? undefined : gatewayThrottles(config.tenant),
    );
    return {
      url: gateway.url,
      channelUrl: channel.url,
      adminKey,
      sqsCredentials,
      config,
      clients,
      endpoints: emulators.endpoints,
      eventSource,
      ...(fanOut ? { fanOut } : {}),
      // A test's firing waits for the gauges it started too, as an invocation on AWS does.
      sweep: {
        fire: async () => {
          await schedule.fire();
          await sweepHandler.published();
        },
        wake: () => schedule.wake(),
        get resting() {
          return schedule.resting;
        },
        stop: () => schedule.stop(),
      },
      async close() {
        await gateway.close();
        await channel.close();
        await schedule.stop();
        await sweepHandler.published();
        await eventSource.stop();
        clients.destroy();
        await emulators.close();
        unlock();
      },
    };
  } catch (err) {
    clients.destroy();
    await channel.close();
    await emulators.close();
    throw err;
  }
}

/** The wake channel listens beside the API: the next port, or any free one when the API's is. */
export function channelPort(apiPort: number): number {
  return apiPort === 0 ? 0 : apiPort + 1;
}

function loadOrCreateAdminKey(dataDir: string): string {
  const file = join(dataDir, 'admin-key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = `lq_${randomBytes(24).toString('base64url')}`;
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

/** The key that seals secrets in the table (SQS credentials), made once: 32 random bytes, base64. */
function loadOrCreateSecretsKey(dataDir: string): string {
  const file = join(dataDir, 'secrets.key');
  if (existsSync(file)) {
    const key = readFileSync(file, 'utf8').trim();
    if (Buffer.from(key, 'base64').byteLength !== 32)
      throw new Error(`${file} is not a secrets key (32 bytes, base64): delete it to make a new one`);
    return key;
  }
  const key = randomBytes(32).toString('base64');
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

const sqsCredentialsFile = z.strictObject({
  access_key_id: z.string().regex(ACCESS_KEY_ID),
  secret_access_key: z.string().regex(SECRET_ACCESS_KEY),
});

/** The admin key's SQS credentials, made once and kept beside the admin key. */
function loadOrCreateSqsCredentials(dataDir: string): SqsCredentials {
  const file = join(dataDir, 'sqs-credentials.json');
  if (existsSync(file)) return sqsCredentialsFile.parse(JSON.parse(readFileSync(file, 'utf8')));
  const credentials = { access_key_id: newAccessKeyId(), secret_access_key: newSecretAccessKey() };
  writeFileSync(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  return credentials;
}
