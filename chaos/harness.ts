import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseTenantConfig } from '../functions/core/config.js';
import { DYNAMODB_EMULATOR_ENV, type DynamoDbEmulator } from '../infra/local/emulators.js';
import { type Invariant, restartsStayFast } from './checks.js';
import { ChildRuntime, pickPort } from './child-runtime.js';
import { History } from './history.js';
import { checkIndex } from './index-check.js';
import { checkLineage } from './lineage-check.js';
import { CALLS_FILE_ENV } from './push-consumer.js';
import { seededRandom } from './random.js';
import {
  FIRST_SHARDS,
  openShards,
  RESHARDS,
  type ReshardDone,
  reshardByRestart,
  reshardLive,
  reshardsDone,
} from './reshards.js';
import { runScenario, type ScenarioResult, workloadOf } from './scenario.js';
import { CHAOS_ADMIN_KEY, CHAOS_TENANT, QUEUES, writeTenantFile } from './tenant.js';

/**
 * The crash harness: the local runtime as a child process, killed with SIGKILL at seeded random
 * moments while producers and consumers run against it, started again on the same data folder
 * and port each time, its streams resharded twice meanwhile (reshards.ts), then drained and
 * checked (scenario.ts). The folder is kept when an invariant fails, with the runtime's log and
 * the whole history.
 */

export interface CrashOptions {
  seed: number;
  durationMs: number;
  kills: number;
  /** New messages per second, per queue. */
  ratePerSecond: number;
  keys: number;
  consumersPerQueue: number;
  drainTimeoutMs: number;
  /** Keep the run's folder even when every invariant holds. */
  keepData?: boolean;
  /** The runtime's DynamoDB emulator; dynalite by default. */
  dynamodb?: DynamoDbEmulator;
  log?: (line: string) => void;
}

export interface Restart {
  /** Seconds into the run. */
  killedAt: number;
  /** From the kill until the runtime served again (including the random time it stayed down). */
  downMs: number;
  /** From the start of the new process until it served: what a restart costs. */
  startMs: number;
  /** From the kill until the first ack after the restart was answered `acked`. */
  recoverMs: number | undefined;
}

export interface CrashReport {
  seed: number;
  restarts: Restart[];
  reshards: ReshardDone[];
  /** Each stream's open shards after the drain. */
  openShards: Map<string, number>;
  scenario: ScenarioResult;
  invariants: Invariant[];
  ok: boolean;
  /** Where the data, the runtime's log and history.json are, when kept. */
  keptAt: string | undefined;
}

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The runtime serves at least this long between two kills, so work progresses between them. */
const MIN_UP_MS = 2000;
const MAX_DOWN_MS = 500;
const START_ATTEMPTS = 3;

export async function runCrash(options: CrashOptions): Promise<CrashReport> {
  const log = options.log ?? (() => undefined);
  const random = seededRandom(options.seed);
  log(`crash run: seed ${options.seed}, ${options.kills} kills in ${options.durationMs / 1000} s`);
  const dynamodb = options.dynamodb ?? 'dynalite';
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-chaos-'));
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir);
  const pushCallsFile = join(dir, 'push-calls.jsonl');
  const runtime = new ChildRuntime({
    repoRoot: REPO_ROOT,
    tenantFile: writeTenantFile(dir),
    dataDir,
    port: await pickPort(random.fork()),
    adminKey: CHAOS_ADMIN_KEY,
    logFile: join(dir, 'runtime.log'),
    env: { [CALLS_FILE_ENV]: pushCallsFile, [DYNAMODB_EMULATOR_ENV]: dynamodb },
  });
  const history = new History();
  const kills: { killedAt: number; readyAt: number; startMs: number }[] = [];
  const killRandom = random.fork();
  const reshards: ReshardDone[] = [];
  const seconds = () => (Date.now() - history.startedAt) / 1000;
  /** Only a run that held every invariant (and was not asked to keep it) leaves nothing behind. */
  let remove = false;

  const startRuntime = async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await runtime.start();
      } catch (err) {
        // A port or a LevelDB lock not yet released by the killed process: try again shortly.
        if (attempt >= START_ATTEMPTS) throw err;
        log(`start failed (${(err as Error).message.split('\n')[0]}); retrying`);
        await sleep(1000);
      }
    }
  };
  const keepRunning = async () => {
    if (runtime.running) return;
    history.mark('runtime found exited; starting it');
    await startRuntime();
  };

  try {
    await startRuntime();
    const scenario = await runScenario({
      baseUrl: runtime.url,
      adminKey: CHAOS_ADMIN_KEY,
      random: random.fork(),
      history,
      ...workloadOf(options),
      pushCallsFile,
      log,
      disrupt: async (until) => {
        const begin = until - options.durationMs;
        const segment = options.durationMs / Math.max(1, options.kills);
        let [readyAt, shards, next] = [begin, FIRST_SHARDS, 0];
        let live: Promise<ReshardDone> | undefined;
        /** The reshards due by `time`, in turn: a live one runs beside the kills, a restart in their stead. */
        const reshardsDue = async (time: number) => {
          for (let step = RESHARDS[next]; step && begin + step.at * options.durationMs <= time; ) {
            await sleep(Math.max(0, begin + step.at * options.durationMs - Date.now()));
            if (live) reshards.push(await live);
            live = undefined;
            history.mark(`reshard ${shards} → ${step.to} (${step.way})`);
            log(`reshard ${shards} → ${step.to} (${step.way}) at +${seconds().toFixed(1)} s`);
            if (step.way === 'live') {
              live = reshardLive({ runtime, dir, from: shards, to: step.to, log }, seconds);
              // Awaited at the next reshard or the workload's end; an early failure waits for that.
              live.catch(() => undefined);
            } else {
              await keepRunning();
              reshards.push(
                await reshardByRestart(
                  { runtime, dir, from: shards, to: step.to, start: startRuntime },
                  seconds,
                ),
              );
              readyAt = Date.now();
            }
            shards = step.to;
            step = RESHARDS[++next];
          }
        };
        for (let i = 0; i < options.kills; i++) {
          // Somewhere in the middle of its share of the run, so kills spread over all of it.
          const target = begin + segment * (i + 0.25 + 0.5 * killRandom.next());
          await reshardsDue(target);
          const at = Math.max(target, readyAt + MIN_UP_MS);
          await sleep(Math.max(0, at - Date.now()));
          await keepRunning();
          history.mark(`kill ${i + 1}`);
          const killedAt = Date.now();
          await runtime.kill();
          await sleep(killRandom.int(0, MAX_DOWN_MS));
          const startedAt = Date.now();
          await startRuntime();
          history.mark(`running again after kill ${i + 1}`);
          readyAt = Date.now();
          kills.push({ killedAt, readyAt, startMs: readyAt - startedAt });
          log(
            `kill ${i + 1} at +${((killedAt - history.startedAt) / 1000).toFixed(1)} s; serving again after ${Date.now() - killedAt} ms`,
          );
        }
        await reshardsDue(until);
        if (live) reshards.push(await live);
      },
      beforeDrain: keepRunning,
    });

    await keepRunning();
    const endpoints = runtime.endpoints;
    if (!endpoints) throw new Error('the runtime does not serve after the drain');
    const shardsAtEnd = await openShards(endpoints);
    await runtime.stop();
    const restarts = kills.map(({ killedAt, readyAt, startMs }, i) => {
      const acked = firstAckBetween(history, readyAt, kills[i + 1]?.killedAt ?? Number.POSITIVE_INFINITY);
      return {
        killedAt: (killedAt - history.startedAt) / 1000,
        downMs: readyAt - killedAt,
        startMs,
        recoverMs: acked === undefined ? undefined : acked - killedAt,
      };
    });
    const invariants = [
      ...scenario.invariants,
      {
        name: 'the runtime never exited on its own',
        ok: runtime.unexpectedExits.length === 0,
        violations: runtime.unexpectedExits,
      },
      await checkIndex(dataDir, CHAOS_TENANT.tenant, dynamodb),
      await checkLineage(
        dataDir,
        parseTenantConfig(CHAOS_TENANT),
        [QUEUES.unordered, QUEUES.ordered],
        dynamodb,
      ),
      restartsStayFast(restarts.map((r) => r.startMs)),
      reshardsDone(reshards, shardsAtEnd),
    ];
    const ok = invariants.every((i) => i.ok);
    remove = ok && options.keepData !== true;
    if (!remove) writeFileSync(join(dir, 'history.json'), JSON.stringify(history, null, 1));
    return {
      seed: options.seed,
      restarts,
      reshards,
      openShards: shardsAtEnd,
      scenario,
      invariants,
      ok,
      keptAt: remove ? undefined : dir,
    };
  } finally {
    await runtime.stop();
    if (remove) rmSync(dir, { recursive: true, force: true });
    else log(`run folder kept: ${dir}`);
  }
}

/** When the first ack answered `acked` in [from, to) was answered. */
function firstAckBetween(history: History, from: number, to: number): number | undefined {
  let first: number | undefined;
  for (const d of history.deliveries) {
    const answeredAt = d.settle?.answeredAt;
    if (d.settle?.outcome !== 'acked' || answeredAt === undefined || answeredAt < from || answeredAt >= to)
      continue;
    if (first === undefined || answeredAt < first) first = answeredAt;
  }
  return first;
}
