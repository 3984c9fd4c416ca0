import type { TenantConfig } from '../functions/core/config.js';
import type { DynamoDbEmulator } from '../infra/local/emulators.js';
import { type Runtime, startRuntime } from '../infra/local/runtime.js';

/**
 * The local runtime as every bench phase runs it: quiet, on a free port, at AWS's pace: a sweep a
 * second, and each shard's event-source poller idle for a second between empty reads (Lambda's
 * Kinesis mapping polls a shard about once a second). Faster idle polling only burnt the two
 * cores on empty GetRecords of idle queues (~2 a delivered message at 20 ms). Nothing wakes the
 * pollers early (AWS's mapping has no such call), so latency is what produce's fast admission
 * and the pollers' own cadence give.
 */
export function startBenchRuntime(
  tenant: TenantConfig,
  dataDir: string,
  adminKey: string,
  dynamodb: DynamoDbEmulator,
  options: {
    /** As AWS runs it: no admission hands leases to, or wakes, a long poll of its own process. */
    asAws?: boolean;
    /**
     * API Gateway's per-queue throttles (the isolation phase). Off for the throughput runs, which
     * measure the lease layer past a route's default 500 requests a second.
     */
    gatewayThrottles?: boolean;
  } = {},
): Promise<Runtime> {
  return startRuntime({
    requestsIsolated: options.asAws === true,
    gatewayThrottles: options.gatewayThrottles === true,
    tenant,
    dataDir,
    port: 0,
    adminKey,
    logLevel: process.env.LEASEQ_BENCH_LOG === 'error' ? 'ERROR' : 'SILENT',
    sweepIntervalMs: 1000,
    idlePollMs: 1000,
    wakePollers: false,
    dynamodb,
  });
}

/** DynamoDB Local reports index write units; dynalite reports the base table only. */
export function reportsIndexUnits(dynamodb: DynamoDbEmulator): boolean {
  return dynamodb === 'dynamodb-local';
}
