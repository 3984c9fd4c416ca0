import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FaultInjector, type RateFaultKind } from '../functions/aws/faults.js';
import { parseTenantConfig } from '../functions/core/config.js';
import type { DynamoDbEmulator } from '../infra/local/emulators.js';
import { startRuntime } from '../infra/local/runtime.js';
import type { Invariant } from './checks.js';
import { History } from './history.js';
import { CALLS_FILE_ENV } from './push-consumer.js';
import { seededRandom } from './random.js';
import { runScenario, type ScenarioResult, workloadOf } from './scenario.js';
import { CHAOS_ADMIN_KEY, CHAOS_TENANT } from './tenant.js';

/**
 * The fault run: AWS calls of the runtime (api, dispatch, sweep alike) fail at a rate through
 * the FaultInjector around its real SDK clients, while producers and consumers run against its
 * HTTP API; then the faults stop, the queues are drained and the history checked (scenario.ts).
 * The injector lives in the runtime's process, so the runtime runs in this one.
 *
 * At 5 % the SDK's retries absorb nearly every fault, so storms (a much higher rate for a
 * moment) make sure the API's own answers to giving up are exercised: 503 with Retry-After and
 * per-message `failed`.
 */

export interface Storms {
  rate: number;
  everyMs: number;
  forMs: number;
}

export interface FaultOptions {
  seed: number;
  durationMs: number;
  /** Share of AWS calls, and of PutRecords entries, that fail. */
  rate: number;
  kinds?: readonly RateFaultKind[];
  storms?: Storms;
  /** New messages per second, per queue. */
  ratePerSecond: number;
  keys: number;
  consumersPerQueue: number;
  drainTimeoutMs: number;
  keepData?: boolean;
  /** The runtime's DynamoDB emulator; dynalite by default. */
  dynamodb?: DynamoDbEmulator;
  log?: (line: string) => void;
}

export interface FaultReport {
  seed: number;
  injected: FaultInjector['injectedByKind'];
  scenario: ScenarioResult;
  invariants: Invariant[];
  ok: boolean;
  keptAt: string | undefined;
}

const ALL_KINDS: readonly RateFaultKind[] = ['throttle', 'timeout', 'server'];

export async function runFaults(options: FaultOptions): Promise<FaultReport> {
  const log = options.log ?? (() => undefined);
  const random = seededRandom(options.seed);
  const kinds = options.kinds ?? ALL_KINDS;
  log(
    `fault run: seed ${options.seed}, ${(options.rate * 100).toFixed(1)} % of AWS calls fail (${kinds.join(', ')}) for ${options.durationMs / 1000} s` +
      (options.storms
        ? `, storms of ${options.storms.rate * 100} % for ${options.storms.forMs} ms every ${options.storms.everyMs} ms`
        : ''),
  );
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-faults-'));
  const faults = new FaultInjector();
  const pushCallsFile = join(dir, 'push-calls.jsonl');
  // The Lambda consumer runs in this process: it finds its calls file where a child's would.
  process.env[CALLS_FILE_ENV] = pushCallsFile;
  const runtime = await startRuntime({
    tenant: parseTenantConfig(CHAOS_TENANT),
    dataDir: dir,
    port: 0,
    adminKey: CHAOS_ADMIN_KEY,
    faults,
    logLevel: 'SILENT',
    dynamodb: options.dynamodb,
  });
  const history = new History();
  const faultRandom = random.fork();
  const failAt = (rate: number) => {
    faults.rateFault = { rate, kinds, random: faultRandom.next };
  };
  let remove = false;
  try {
    const scenario = await runScenario({
      baseUrl: runtime.url,
      adminKey: CHAOS_ADMIN_KEY,
      random: random.fork(),
      history,
      ...workloadOf(options),
      pushCallsFile,
      log,
      disrupt: async (until) => {
        failAt(options.rate);
        history.mark(`faults at ${options.rate}`);
        const storms = options.storms;
        if (!storms) return;
        while (Date.now() + storms.everyMs + storms.forMs < until) {
          await sleep(storms.everyMs);
          failAt(storms.rate);
          history.mark(`storm at ${storms.rate}`);
          await sleep(storms.forMs);
          failAt(options.rate);
          history.mark(`storm over`);
        }
      },
      beforeDrain: () => {
        faults.clear();
        history.mark('faults off');
      },
    });
    const ok = scenario.invariants.every((i) => i.ok);
    remove = ok && options.keepData !== true;
    if (!remove) writeFileSync(join(dir, 'history.json'), JSON.stringify(history, null, 1));
    return {
      seed: options.seed,
      injected: { ...faults.injectedByKind },
      scenario,
      invariants: scenario.invariants,
      ok,
      keptAt: remove ? undefined : dir,
    };
  } finally {
    faults.clear();
    await runtime.close();
    if (remove) rmSync(dir, { recursive: true, force: true });
    else log(`run folder kept: ${dir}`);
  }
}
