import { describe, expect, it } from 'vitest';
import { runCrash } from '../../chaos/harness.js';
import { formatCrash } from '../../chaos/report.js';
import { SHORT_RUN } from './short-run.js';

/**
 * The short crash run: the runtime as a child process, killed with SIGKILL three times in
 * 40 s under a few hundred messages, a replay and a redrive, and restarted on its data each time,
 * its streams resharded 2 → 4 while it runs and 4 → 3 by a restart with the changed file.
 * `npm run chaos` runs the long one.
 */

describe('crash: SIGKILL at random moments, restart on the same data', () => {
  it('loses no accepted message, keeps per-key order and refuses every stale receipt', async () => {
    const report = await runCrash({
      ...SHORT_RUN,
      durationMs: 40_000,
      kills: 3,
    });
    console.log(formatCrash(report));

    expect(report.restarts).toHaveLength(3);
    expect(report.reshards.map((r) => [r.way, r.from, r.to])).toEqual([
      ['live', 2, 4],
      ['restart', 4, 3],
    ]);
    // The workload ran: the invariants below are about real traffic.
    expect(report.scenario.figures.accepted).toBeGreaterThan(20);
    // The operator's replay and redrive ran alongside: their checks below are about real jobs.
    const { replays, redrives } = report.scenario.jobs;
    expect([replays.size, redrives.size]).toEqual([1, 1]);
    expect([...replays.values()][0]?.expected).toBeGreaterThan(0);
    for (const invariant of report.invariants) expect(invariant.violations, invariant.name).toEqual([]);
  }, 180_000);
});
