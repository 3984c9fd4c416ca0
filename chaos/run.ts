import { parseArgs } from 'node:util';
import { z } from 'zod';
import { DYNAMODB_EMULATOR_ENV, dynamodbEmulatorSchema } from '../infra/local/emulators.js';
import { runFaults } from './fault-run.js';
import { runCrash } from './harness.js';
import { newSeed } from './random.js';
import { formatCrash, formatFaults } from './report.js';

/**
 * `npm run chaos [-- --minutes 5 --kills 10 --fault-rate 0.05 --seed N --only crash|faults --keep]`:
 * the long crash run (the runtime killed with SIGKILL `--kills` times over `--minutes`), then
 * the long fault run (`--fault-rate` of AWS calls failing for `--minutes`, with storms), each
 * printing its figures and invariants. Exits 1 when an invariant fails; the run's folder
 * (data, runtime log, history.json) is then kept and printed. The same seed replays the same
 * choices (kill moments, consumer behaviour, faults), not the same timings.
 */

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '5' },
    kills: { type: 'string', default: '10' },
    'fault-rate': { type: 'string', default: '0.05' },
    seed: { type: 'string' },
    only: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});

const options = z
  .object({
    minutes: z.coerce.number().positive(),
    kills: z.coerce.number().int().min(0),
    faultRate: z.coerce.number().min(0).max(1),
    seed: z.coerce.number().int().min(0).optional(),
    only: z.enum(['crash', 'faults']).optional(),
    keep: z.boolean(),
    dynamodb: dynamodbEmulatorSchema,
  })
  .parse({
    minutes: values.minutes,
    kills: values.kills,
    faultRate: values['fault-rate'],
    seed: values.seed,
    only: values.only,
    keep: values.keep,
    dynamodb: process.env[DYNAMODB_EMULATOR_ENV] || undefined,
  });

/** Heavier than the tests' short runs, for as long as asked. */
const WORKLOAD = { ratePerSecond: 10, keys: 20, consumersPerQueue: 4, drainTimeoutMs: 5 * 60_000 };
const STORMS = { rate: 0.8, everyMs: 15_000, forMs: 2000 };

const seed = options.seed ?? newSeed();
const durationMs = options.minutes * 60_000;
const log = (line: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

let ok = true;
if (options.only !== 'faults') {
  const crash = await runCrash({
    ...WORKLOAD,
    seed,
    durationMs,
    kills: options.kills,
    keepData: options.keep,
    dynamodb: options.dynamodb,
    log,
  });
  process.stdout.write(`\n${formatCrash(crash)}\n\n`);
  ok &&= crash.ok;
}
if (options.only !== 'crash') {
  const faults = await runFaults({
    ...WORKLOAD,
    seed,
    durationMs,
    rate: options.faultRate,
    storms: STORMS,
    keepData: options.keep,
    dynamodb: options.dynamodb,
    log,
  });
  process.stdout.write(`\n${formatFaults(faults)}\n\n`);
  ok &&= faults.ok;
}
process.exit(ok ? 0 : 1);
