import { describe, expect, it } from 'vitest';
import { runFaults } from '../../chaos/fault-run.js';
import { formatFaults } from '../../chaos/report.js';
import { SHORT_RUN } from './short-run.js';

/**
 * The short fault run: 5 % of the runtime's AWS calls and PutRecords entries fail (throttling,
 * timeouts, 500s) for 20 s, with two storms at 80 %, while producers and consumers run and an
 * operator replays acked messages and redrives the DLQ.
 * `npm run chaos` runs the long one.
 */

describe('faults: AWS calls failing at a rate', () => {
  it('answers 503 with Retry-After or retryable failed, never 500, and loses nothing accepted', async () => {
    const report = await runFaults({
      ...SHORT_RUN,
      durationMs: 20_000,
      rate: 0.05,
      storms: { rate: 0.8, everyMs: 5000, forMs: 2000 },
    });
    console.log(formatFaults(report));

    expect(report.scenario.figures.accepted).toBeGreaterThan(20);
    // The operator's replay and redrive ran alongside: their checks below are about real jobs.
    const { replays, redrives } = report.scenario.jobs;
    expect([replays.size, redrives.size]).toEqual([1, 1]);
    expect([...replays.values()][0]?.expected).toBeGreaterThan(0);
    // The storms made the API give up on AWS, so its answers to that were checked too.
    const { answers, failedResults } = report.scenario.figures;
    const unavailable = Object.entries(answers).filter(([k]) => k.endsWith(' 503'));
    expect(unavailable.length + failedResults, JSON.stringify(answers)).toBeGreaterThan(0);
    for (const invariant of report.invariants) expect(invariant.violations, invariant.name).toEqual([]);
  }, 120_000);
});
