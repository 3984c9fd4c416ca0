import type { TenantConfig } from '../functions/core/config.js';
import type { DynamoDbEmulator } from '../infra/local/emulators.js';
import { type Runtime, startRuntime } from '../infra/local/runtime.js';

/** The local runtime as every bench phase runs it: quiet, on a free port, AWS's sweep pace. */
export function startBenchRuntime(
  tenant: TenantConfig,
  dataDir: string,
  adminKey: string,
  dynamodb: DynamoDbEmulator,
): Promise<Runtime> {
  return startRuntime({
    tenant,
    dataDir,
    port: 0,
    adminKey,
    logLevel: 'SILENT',
    sweepIntervalMs: 1000,
    idlePollMs: 20,
    dynamodb,
  });
}

/** DynamoDB Local reports index write units; dynalite reports the base table only. */
export function reportsIndexUnits(dynamodb: DynamoDbEmulator): boolean {
  return dynamodb === 'dynamodb-local';
}
