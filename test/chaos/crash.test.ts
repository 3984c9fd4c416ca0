import { describe, expect, it } from 'vitest';
import { runCrash } from '../../chaos/harness.js';
import { formatCrash } from '../../chaos/report.js';
import { DYNAMODB } from '../helpers/runtime.js';

/**
 * The short crash run: the runtime as a child process, killed with SIGKILL three times in
 * 40 s under a few hundred messages and restarted on its data each time. `npm run chaos` runs
 * the long one. CHAOS_SEED replays another seed.
 */

const SEED = Number(process.env.CHAOS_SEED ?? 7);

describe('crash: SIGKILL at random moments, restart on the same data', () => {
  it('loses no accepted message, keeps per-key order and refuses every stale receipt', async () => {
    const report = await runCrash({
      seed: SEED,
      durationMs: 40_000,
      kills: 3,
      ratePerSecond: 5,
      keys: 12,
      consumersPerQueue: 3,
      drainTimeoutMs: 60_000,
      dynamodb: DYNAMODB,
      // The seed first, and each kill as it happens: a run that times out still says what it did.
      log: (line) => console.log(line),
    });
    console.log(formatCrash(report));

    expect(report.restarts).toHaveLength(3);
    // The workload ran: the invariants below are about real traffic.
    expect(report.scenario.figures.accepted).toBeGreaterThan(20);
    for (const invariant of report.invariants) expect(invariant.violations, invariant.name).toEqual([]);
  }, 180_000);
});
