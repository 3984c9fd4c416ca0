import { DYNAMODB } from '../helpers/runtime.js';

/** What the short crash and fault runs in `npm test` share; `npm run chaos` runs longer ones. */
export const SHORT_RUN = {
  /** CHAOS_SEED replays another seed. */
  seed: Number(process.env.CHAOS_SEED ?? 7),
  ratePerSecond: 5,
  keys: 12,
  consumersPerQueue: 3,
  drainTimeoutMs: 60_000,
  dynamodb: DYNAMODB,
  // The seed first, and each disruption as it happens: a run that times out still says what it did.
  log: (line: string) => console.log(line),
};
