import { type Invariant, startTimes } from './checks.js';
import type { FaultReport } from './fault-run.js';
import type { CrashReport } from './harness.js';
import type { JobsEnd } from './jobs.js';
import type { ReshardDone } from './reshards.js';
import type { ScenarioResult } from './scenario.js';

/** The text a chaos run prints: its figures, then each invariant with its first violations. */

const EXAMPLES = 10;

export function formatCrash(r: CrashReport): string {
  const restarts = r.restarts.map(
    (x, i) =>
      `  restart ${i + 1}: killed at +${x.killedAt.toFixed(1)} s, serving after ${x.downMs} ms ` +
      `(${x.startMs} ms from its start), ` +
      `first ack after ${x.recoverMs === undefined ? '-' : `${x.recoverMs} ms`}`,
  );
  return [
    `crash run, seed ${r.seed}`,
    `  kills ${r.restarts.length}, restarts ${r.restarts.length}`,
    ...restarts,
    ...startTimeLines(r.restarts.map((x) => x.startMs)),
    ...reshardLines(r),
    ...figures(r.scenario),
    ...invariants(r.invariants),
    ...(r.keptAt ? [`  run folder: ${r.keptAt}`] : []),
  ].join('\n');
}

/** Whether restarts slow down as kills and data accumulate: the first ten starts beside the last ten. */
function startTimeLines(ms: readonly number[]): string[] {
  const t = startTimes(ms);
  if (!t) return [];
  return [
    `  start to serving, median of the first ten ${t.first} ms, of the last ten ${t.last} ms (${(t.last / t.first).toFixed(2)}×)`,
  ];
}

/** The reshards done (when, from → to, how), the open shards at the end, and what the starts said. */
function reshardLines({ reshards, openShards }: CrashReport): string[] {
  const done = reshards.map(
    (x) =>
      `${x.from} → ${x.to} ${x.way === 'live' ? 'live' : 'by restart'} at +${x.began.toFixed(1)} s ` +
      `(done +${x.ended.toFixed(1)} s, ${interruptions(x)})`,
  );
  const end = [...openShards].map(([stream, n]) => `${stream} ${n}`).join(', ');
  return [
    `  reshards: ${done.join('; ') || 'none'}; open shards at the end: ${end}`,
    ...reshards.flatMap((x) => x.startLines.map((l) => `    ${x.from} → ${x.to}, a start: ${l}`)),
  ];
}

function interruptions(x: ReshardDone): string {
  if (x.way === 'restart') return x.cut ? 'its first start killed' : 'its first start served before its kill';
  return `its calls cut short ${x.cut === 1 ? 'once' : `${x.cut} times`}`;
}

export function formatFaults(r: FaultReport): string {
  const injected = Object.entries(r.injected)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
  return [
    `fault run, seed ${r.seed}`,
    `  faults injected: ${injected}`,
    ...figures(r.scenario),
    ...invariants(r.invariants),
    ...(r.keptAt ? [`  run folder: ${r.keptAt}`] : []),
  ].join('\n');
}

function figures({
  figures: f,
  push: p,
  jobs,
  drainMs,
  parkedKeysSkipped: parked,
}: ScenarioResult): string[] {
  const d = f.duplicates;
  const r = f.replayDeliveries;
  return [
    `  messages: sent ${f.sent}, accepted ${f.accepted}, never answered accepted ${f.unresolved}, ` +
      `answered failed ${f.failedResults} times`,
    `  delivered ${f.delivered} (${f.deliveries} deliveries), acked ${f.acked}, dead ${f.dead}`,
    `  duplicates: accepted more than once ${d.acceptedMoreThanOnce}, redeliveries ${d.redeliveries}, ` +
      `delivered after a confirmed ack ${d.afterConfirmedAck}, after an unanswered ack ${d.afterUnansweredAck}`,
    `  settles refused as stale ${f.staleRefused}, unanswered ${f.unansweredSettles}`,
    `  Lambda consumer (ordered push queue): ${p.calls} calls, ${p.handled} messages handled, ` +
      `${p.failedAttempts} failed attempts, ${p.duplicates} handled again`,
    ...jobLines(jobs),
    `  replay copies: ${r.all} deliveries, ${r.retries} of them retries, ${r.redriven} after a redrive`,
    `  drain ${(drainMs / 1000).toFixed(1)} s, parked keys skipped ${parked}`,
    `  answers: ${Object.entries(f.answers)
      .map(([k, n]) => `${k}: ${n}`)
      .join(', ')}`,
  ];
}

/** Each job's final count beside what the history says it should be. */
function jobLines(jobs: JobsEnd): string[] {
  return [
    ...[...jobs.replays].map(
      ([id, j]) =>
        `  replay ${id}: ${j.status}, replayed ${j.replayed} (expected ${j.expected}), scanned ${j.scanned}`,
    ),
    ...[...jobs.redrives].map(
      ([id, j]) =>
        `  redrive ${id}: ${j.status}, moved ${j.moved} (expected ${j.expected}; the DLQ listed ${j.listed.before} ` +
        `before its start, ${j.listed.after} after; traces redriven by it ${j.taken.size}), remaining ${j.remaining}`,
    ),
  ];
}

function invariants(list: readonly Invariant[]): string[] {
  return list.flatMap((i) => [
    `  ${i.ok ? 'ok  ' : 'FAIL'} ${i.name}${i.ok ? '' : ` (${i.violations.length})`}`,
    ...i.violations.slice(0, EXAMPLES).map((v) => `         ${v}`),
  ]);
}
