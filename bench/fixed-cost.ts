import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseTenantConfig } from '../functions/core/config.js';
import { DYNAMODB_EMULATOR_ENV, parseDynamoDbEmulator } from '../infra/local/emulators.js';
import type { Runtime } from '../infra/local/runtime.js';
import { fixedMonthly, printFixed } from './cost.js';
import { benchTenantFile, deployedTenants, FIXED_TENANTS } from './deployed-stack.js';
import { measureIdleTick } from './idle-tick.js';
import { startBenchRuntime } from './runtime.js';

/**
 * `npx tsx bench/fixed-cost.ts`: the bench's fixed monthly cost alone (bench/cost.ts fixedMonthly),
 * without its runs: both goal tenants synthesized and priced idle, and the sweep's idle tick
 * measured on a local runtime of the ten-queue tenant. Some seconds, not the bench's minutes.
 */

/** The sweep's first pass also computes every queue's gauges: the tick is measured after it. */
const FIRST_SWEEP_MS = 1500;

async function main(): Promise<void> {
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  const deployed = await deployedTenants();
  const dataDir = mkdtempSync(join(tmpdir(), 'leaseq-fixed-'));
  let runtime: Runtime | undefined;
  try {
    runtime = await startBenchRuntime(
      parseTenantConfig(benchTenantFile(FIXED_TENANTS.tenQueues.queues), 'bench tenant'),
      dataDir,
      'bench-admin-key-0123456789',
      parseDynamoDbEmulator(process.env[DYNAMODB_EMULATOR_ENV]),
    );
    await sleep(FIRST_SWEEP_MS);
    const tick = await measureIdleTick(runtime);
    printFixed(fixedMonthly(deployed, tick));
  } finally {
    await runtime?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
