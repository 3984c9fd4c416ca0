import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { createApiHandler } from '../../functions/api/app.js';
import { type AwsClients, createClients } from '../../functions/aws/clients.js';
import type { FaultInjector } from '../../functions/aws/faults.js';
import { hashApiKey } from '../../functions/core/auth.js';
import { type TenantConfig, tableName } from '../../functions/core/config.js';
import type { RuntimeConfig } from '../../functions/core/runtime-config.js';
import { startEmulators } from './emulators.js';
import { startGateway } from './http-gateway.js';
import { ensureResources } from './resources.js';

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
}

export interface Runtime {
  url: string;
  adminKey: string;
  config: RuntimeConfig;
  /** Clients of the runtime itself (metered), for tools and tests that inspect state. */
  clients: AwsClients;
  endpoints: { dynamodb: string; kinesis: string; s3: string };
  close(): Promise<void>;
}

export const ADMIN_KEY_NAME = 'local-admin';

export async function startRuntime(options: RuntimeOptions): Promise<Runtime> {
  mkdirSync(options.dataDir, { recursive: true });
  const adminKey = options.adminKey ?? loadOrCreateAdminKey(options.dataDir);
  const totalShards = Object.values(options.tenant.queues).reduce((n, q) => n + q.shards, 0);
  const emulators = await startEmulators({
    dataDir: options.dataDir,
    shardLimit: Math.max(10, totalShards * 2),
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
  };
  const clients = createClients({
    region: config.region,
    endpoints: emulators.endpoints,
    faults: options.faults,
  });
  try {
    await ensureResources(clients, options.tenant, { table: config.tableName, bucket: config.bucketName });
    const logger = new Logger({ serviceName: 'leaseq-api', logLevel: options.logLevel ?? 'WARN' });
    const gateway = await startGateway(createApiHandler(config, clients, logger), options.port);
    return {
      url: gateway.url,
      adminKey,
      config,
      clients,
      endpoints: emulators.endpoints,
      async close() {
        await gateway.close();
        clients.destroy();
        await emulators.close();
      },
    };
  } catch (err) {
    clients.destroy();
    await emulators.close();
    throw err;
  }
}

function loadOrCreateAdminKey(dataDir: string): string {
  const file = join(dataDir, 'admin-key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = `lq_${randomBytes(24).toString('base64url')}`;
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}
