import { performance } from 'node:perf_hooks';
import type { Endpoint } from './http.js';
import { formatNumber, formatTable } from './stats.js';
import { produce, type WorkerHooks, workerLoop } from './workload.js';

/**
 * A "rebalance storm", shown not to exist: leaseq has no partition assignment to
 * rebalance, a new worker just receives. Behind a backlog produced first, workers are added
 * 1 → 2 → 4 → 8 → 16 during one run, and the acks of every second are counted: a worker joining
 * should lift throughput (or leave it where the machine's cores cap it), never dip it.
 */

export const SCALING_QUEUE = 'scale';
const STEPS = [1, 2, 4, 8, 16];
/** Acks a second the backlog is sized for (above the ~900 2 cores reach), so it outlasts the run. */
const BACKLOG_RATE = 1500;
/** Three seconds after a change below this share of the three before it are a dip. */
const DIP_SHARE = 0.8;

export interface ScalingReport {
  secondsPerStep: number;
  backlog: number;
  /** Acks in each second of the run, from the first worker's start. */
  ackedPerSecond: number[];
  /** The second the backlog ran out in, if it did: seconds from then on say nothing of the workers. */
  ranOutAt: number | null;
  /** Each change: the workers from then on, the second it happened, the rate around it. */
  changes: {
    workers: number;
    atSecond: number;
    before: number;
    after: number;
    dip: boolean;
    /** The backlog ran out around it: not measured. */
    ranOut: boolean;
  }[];
}

export async function runScaling(
  api: Endpoint,
  secondsPerStep: number,
  progress: (line: string) => void,
): Promise<ScalingReport> {
  const backlog = BACKLOG_RATE * secondsPerStep * STEPS.length;
  progress(
    `scaling: producing a backlog of ${backlog}, then workers ${STEPS.join(' → ')} every ${secondsPerStep} s`,
  );
  await produce(api, SCALING_QUEUE, { messages: backlog, batchSize: 100, inFlight: 2, ids: 'server' });
  const acked: number[] = [];
  let stop = false;
  let failure: unknown;
  const startedAt = performance.now();
  const hooks: WorkerHooks = {
    stopped: () => stop || failure !== undefined,
    onAcked: (ids) => {
      const second = Math.floor((performance.now() - startedAt) / 1000);
      acked[second] = (acked[second] ?? 0) + ids.length;
    },
  };
  const loops: Promise<void>[] = [];
  let workers = 0;
  for (const [i, target] of STEPS.entries()) {
    const due = startedAt + i * secondsPerStep * 1000;
    await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())));
    for (; workers < target; workers++) {
      const id = workers;
      loops.push(
        workerLoop(api, SCALING_QUEUE, { id, nackFirstAttempt: false }, hooks).catch((err) => {
          failure ??= err;
        }),
      );
    }
  }
  await new Promise((r) => setTimeout(r, secondsPerStep * 1000));
  stop = true;
  await Promise.all(loops);
  if (failure !== undefined) throw failure;
  const perSecond = Array.from({ length: secondsPerStep * STEPS.length }, (_, s) => acked[s] ?? 0);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  let acksSoFar = 0;
  const ranOutAt = perSecond.findIndex((n) => {
    acksSoFar += n;
    return acksSoFar >= backlog;
  });
  const changes = STEPS.slice(1).map((target, i) => {
    const at = (i + 1) * secondsPerStep;
    // The second a worker joins in is partly the old count's; the three whole seconds on each side
    // (one second on 2 shared cores swings by a third with nothing changing).
    const before = mean(perSecond.slice(at - 3, at));
    const after = mean(perSecond.slice(at + 1, at + 4));
    const ranOut = ranOutAt >= 0 && ranOutAt < at + 3;
    return {
      workers: target,
      atSecond: at,
      before,
      after,
      dip: !ranOut && after < DIP_SHARE * before,
      ranOut,
    };
  });
  return {
    secondsPerStep,
    backlog,
    ranOutAt: ranOutAt >= 0 ? ranOutAt : null,
    ackedPerSecond: perSecond,
    changes,
  };
}

export function printScaling(report: ScalingReport): void {
  console.log(
    `\nWorkers added during one run (behind a backlog of ${report.backlog.toLocaleString('en-US')}; ` +
      `a change every ${report.secondsPerStep} s): acks per second`,
  );
  const workersAt = (second: number) => STEPS[Math.floor(second / report.secondsPerStep)] ?? 0;
  console.log(
    formatTable(
      ['second', 'workers', 'acks/s'],
      report.ackedPerSecond.map((n, s) => [s, workersAt(s), n]),
    ),
  );
  console.log(
    `\n${formatTable(
      ['change', 'at s', 'acks/s before (3 s)', 'after (3 s)', `dip (< ${DIP_SHARE * 100} %)?`],
      report.changes.map((c) => [
        `→ ${c.workers}`,
        c.atSecond,
        formatNumber(c.before),
        formatNumber(c.after),
        c.ranOut ? 'backlog ran out' : c.dip ? 'DIP' : 'no',
      ]),
    )}`,
  );
}
