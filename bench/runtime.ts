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
    // The bench switches busy-time fan-out itself, run by run (onBusyStream).
    sweepSwitchesFanOut: false,
    dynamodb,
  });
}

/**
 * How the bench's streams read: `busy`, the default's `fan_out: "when_busy"` switched on for each
 * run as the sweep switches a stream that busy (within two gauge passes of the load), and off
 * after it, so that no other run's busy mapping polls beside it; `always` (`fan_out: true`,
 * --fan-out); `polled` (`fan_out: false`, --polled).
 */
export type StreamMode = 'busy' | 'always' | 'polled';

/** The tenant file's `fan_out` for a stream of the mode. */
export function fanOutOf(mode: StreamMode): { fan_out?: boolean } {
  return mode === 'busy' ? {} : { fan_out: mode === 'always' };
}

/** Runs `fn` with `stream`'s busy-time fan-out on, where the runtime switches it. */
export async function onBusyStream<T>(runtime: Runtime, stream: string, fn: () => Promise<T>): Promise<T> {
  const busy = Object.values(runtime.config.tenant.queues).some(
    (q) => q.stream === stream && q.fan_out === 'when_busy',
  );
  if (!busy || !runtime.fanOut) return fn();
  await runtime.fanOut.turnOn(stream);
  try {
    return await fn();
  } finally {
    await runtime.fanOut.turnOff(stream);
  }
}

/** DynamoDB Local reports index write units; dynalite reports the base table only. */
export function reportsIndexUnits(dynamodb: DynamoDbEmulator): boolean {
  return dynamodb === 'dynamodb-local';
}
