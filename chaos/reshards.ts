import { setTimeout as sleep } from 'node:timers/promises';
import { parseTenantConfig, tenantStreams } from '../functions/core/config.js';
import { createAdminClients } from '../infra/local/admin-clients.js';
import { listOpenShards, reshardStream } from '../infra/local/reshard.js';
import type { Invariant } from './checks.js';
import type { ChildRuntime, EmulatorEndpoints } from './child-runtime.js';
import { CHAOS_TENANT, chaosTenant, writeTenantFile } from './tenant.js';

/**
 * The crash run's reshards: every stream of the chaos tenant (the pull queues' shared one, the
 * ordered push queue's own) goes from 2 shards to 4 a third of the way in, and to 3 two thirds in,
 * while the kills go on. Each the way it reaches a tenant:
 * - live: the file says 4, and the running runtime's streams are resharded under it with
 *   SplitShard and MergeShards against its emulators (as a deploy's UpdateShardCount reshards
 *   under running functions). A kill ends the calls; the start after it finds each stream as it
 *   was left and reshards the rest itself (the file says 4), and the calls are made again once it
 *   serves.
 * - restart: the file says 3, and the runtime is stopped and started (a user's Ctrl-C and
 *   `npm start`): the start reshards. That start is killed as soon as it reports one stream
 *   resharded, the other mid-way, and the next start finishes.
 */

export type ReshardWay = 'live' | 'restart';

export interface ReshardStep {
  /** Where in the run, as a fraction of the workload's time. */
  at: number;
  to: number;
  way: ReshardWay;
}

export const FIRST_SHARDS = CHAOS_TENANT.streams.shared.shards;
export const RESHARDS: readonly ReshardStep[] = [
  { at: 1 / 3, to: 4, way: 'live' },
  { at: 2 / 3, to: 3, way: 'restart' },
];

export interface ReshardDone {
  way: ReshardWay;
  from: number;
  to: number;
  /** Seconds into the run: when it began, and when every stream had its new count. */
  began: number;
  ended: number;
  /** live: calls cut short (a kill); restart: starts killed before they served. */
  cut: number;
  /** What the starts while it was under way said of their own reshards (infra/local/resources.ts). */
  startLines: string[];
}

/** How often the live reshard's calls may be cut short before the run gives up on it. */
const LIVE_ATTEMPTS = 20;
/** A start that reports nothing of a reshard is killed this long after it began anyway. */
const KILL_START_WITHIN_MS = 30_000;
/** A start reports each stream it resharded once that is done (infra/local/resources.ts). */
const RESHARD_LINE = /^stream \S+: resharded from \d+ to \d+ shards.*$/m;
/** After a call is cut short, the kill that cut it has ended its process by then. */
const CUT_SETTLES_MS = 1000;

/** The chaos tenant's streams, by name. */
export function chaosStreams(): string[] {
  return [...tenantStreams(parseTenantConfig(CHAOS_TENANT)).keys()];
}

/** The reshards that start-up output reports. */
export function reshardLines(output: string): string[] {
  return output.match(new RegExp(RESHARD_LINE, 'gm')) ?? [];
}

/** Each stream's open shards, from the emulators of the runtime serving now. */
export async function openShards(endpoints: EmulatorEndpoints): Promise<Map<string, number>> {
  const admin = createAdminClients(endpoints);
  try {
    const counts = await Promise.all(
      chaosStreams().map(async (s) => [s, (await listOpenShards(admin.kinesis, s)).length] as const),
    );
    return new Map(counts);
  } finally {
    admin.destroy();
  }
}

/** The endpoints of the runtime once it serves (the kill loop starts it again after a kill). */
async function serving(runtime: ChildRuntime): Promise<EmulatorEndpoints> {
  for (;;) {
    const endpoints = runtime.endpoints;
    if (endpoints) return endpoints;
    await sleep(100);
  }
}

/**
 * Reshards every stream to `to` under the running runtime, again after each kill that cuts it
 * short, until each has `to` open shards. The tenant file says `to` first, so every start from
 * now on keeps (or finishes) it.
 */
export async function reshardLive(
  o: { runtime: ChildRuntime; dir: string; from: number; to: number; log: (line: string) => void },
  seconds: () => number,
): Promise<ReshardDone> {
  const began = seconds();
  writeTenantFile(o.dir, chaosTenant(o.to));
  const startLines: string[] = [];
  for (let attempt = 1; ; attempt++) {
    const endpoints = await serving(o.runtime);
    const admin = createAdminClients(endpoints);
    try {
      await Promise.all(chaosStreams().map((s) => reshardStream(admin.kinesis, s, o.to)));
      return {
        way: 'live',
        from: o.from,
        to: o.to,
        began,
        ended: seconds(),
        cut: attempt - 1,
        startLines,
      };
    } catch (err) {
      if (attempt >= LIVE_ATTEMPTS) throw err;
      o.log(
        `live reshard to ${o.to} cut short (${(err as Error).message.split('\n')[0]}); again once it serves`,
      );
      await sleep(CUT_SETTLES_MS);
      // A start since (new emulators) may have finished it: its lines say how far the kill left it.
      if ((await serving(o.runtime)).kinesis !== endpoints.kinesis)
        startLines.push(...reshardLines(o.runtime.startOutput));
    } finally {
      admin.destroy();
    }
  }
}

/**
 * Reshards every stream from `from` to `to` the way a user does: the file changes, the runtime
 * stops and starts. The first start is killed as soon as it reports a stream resharded (the
 * others are then mid-way, or done), and `start` starts it for good.
 */
export async function reshardByRestart(
  o: { runtime: ChildRuntime; dir: string; from: number; to: number; start: () => Promise<void> },
  seconds: () => number,
): Promise<ReshardDone> {
  const began = seconds();
  writeTenantFile(o.dir, chaosTenant(o.to));
  await o.runtime.terminate();
  const served = await o.runtime.startAndKill(RESHARD_LINE, KILL_START_WITHIN_MS);
  const startLines = reshardLines(o.runtime.startOutput).map((l) => `${l} (then killed)`);
  await o.start();
  const rest = reshardLines(o.runtime.startOutput);
  startLines.push(...(rest.length ? rest : ['the next start found nothing left to reshard']));
  return { way: 'restart', from: o.from, to: o.to, began, ended: seconds(), cut: served ? 0 : 1, startLines };
}

/**
 * The run did reshard: each live or restart reshard ended with the count asked for, and every
 * stream has the last one's open shards after the drain.
 */
export function reshardsDone(done: readonly ReshardDone[], end: Map<string, number>): Invariant {
  const violations = [
    ...RESHARDS.filter((r, i) => done[i]?.to !== r.to || done[i]?.way !== r.way).map(
      (r) => `the ${r.way} reshard to ${r.to} was not done`,
    ),
    ...[...end]
      .filter(([, n]) => n !== RESHARDS.at(-1)?.to)
      .map(([s, n]) => `${s} has ${n} open shards at the end, not ${RESHARDS.at(-1)?.to}`),
  ];
  return {
    name: `every stream resharded ${[FIRST_SHARDS, ...RESHARDS.map((r) => r.to)].join(' → ')} under the kills`,
    ok: violations.length === 0,
    violations,
  };
}
