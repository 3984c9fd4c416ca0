import type { IdSource, OrderedKeys } from './workload.js';

/**
 * What `npm run bench` runs: the produce runs, the end-to-end runs (each on a queue of its own, so
 * no run starts with another's messages or counters) and the backlog sizes; and which run each of
 * the goals' figures is read from.
 */

export const SHARDS = 2;

export const PRODUCE_RUNS = [
  { queue: 'p1', batchSize: 1, inFlight: 8 },
  { queue: 'p10', batchSize: 10, inFlight: 4 },
  { queue: 'p100', batchSize: 100, inFlight: 2 },
  { queue: 'p500', batchSize: 500, inFlight: 2 },
] as const;

export interface EndToEndSpec {
  queue: string;
  workers: number;
  ids: IdSource;
  /** Each message's first delivery is nacked, its second acked (the failed-attempt figure). */
  nackFirstAttempt: boolean;
  /**
   * Paced production instead of WORKLOAD's burst (whose producers outrun the workers, so its
   * latency is mostly the backlog's wait): `batch` messages a request, `perSecond` in all.
   */
  paced?: { perSecond: number; batch: number; messages: number };
  /** The queue's fast_admission when not the default (`quiet`). */
  fastAdmission?: 'always' | 'off';
  /** An ordered queue, and how its messages get their keys. */
  ordered?: OrderedKeys;
  /** The ordered queue's max_per_key when not the default (1). */
  maxPerKey?: number;
}

const C4 = { workers: 4, ids: 'server', nackFirstAttempt: false } as const;

/** 4 workers at a third of what they can take. */
const PACED_C4 = {
  workers: 4,
  ids: 'server',
  nackFirstAttempt: false,
  paced: { perSecond: 100, batch: 10, messages: 600 },
} as const;

/** Enough keys that a key is rarely still in flight when its next message comes. */
const ORDERED_KEYS = { keys: 500, random: true } as const;

export const END_TO_END_RUNS: readonly EndToEndSpec[] = [
  { queue: 'c1', workers: 1, ids: 'server', nackFirstAttempt: false },
  { queue: 'c4', ...C4 },
  { queue: 'c16', workers: 16, ids: 'server', nackFirstAttempt: false },
  { queue: 'c4-ids', workers: 4, ids: 'producer', nackFirstAttempt: false },
  { queue: 'c4-nack', workers: 4, ids: 'server', nackFirstAttempt: true },
  // Latency at 4 workers that keep up (100 msg/s, a third of what they can take), and what it
  // costs: past a range's worth a second per shard only fast_admission always admits at produce.
  { queue: 'c4-paced', ...PACED_C4 },
  { queue: 'c4-always', ...PACED_C4, fastAdmission: 'always' },
  // c4's workload on ordered queues, a key rarely in flight twice at once (500 keys) or one key
  // with 30 % of the messages, which only max_per_key's batches of a key can keep up with.
  { queue: 'c4-ordered', ...C4, ordered: ORDERED_KEYS },
  { queue: 'c4-ordered-hot', ...C4, ordered: { ...ORDERED_KEYS, hotShare: 0.3 }, maxPerKey: 10 },
  { queue: 'c4-ordered-paced', ...PACED_C4, fastAdmission: 'always', ordered: ORDERED_KEYS },
  { queue: 'c4-ordered-nack', ...C4, nackFirstAttempt: true, ordered: ORDERED_KEYS },
  // Where latency matters most: 10 messages a second to one worker.
  {
    queue: 't1',
    workers: 1,
    ids: 'server',
    nackFirstAttempt: false,
    paced: { perSecond: 10, batch: 1, messages: 200 },
  },
  // The same on an ordered queue: a key's decisions are written at admission, by produce here.
  {
    queue: 't1-ordered',
    workers: 1,
    ids: 'server',
    nackFirstAttempt: false,
    paced: { perSecond: 10, batch: 1, messages: 200 },
    ordered: { keys: 64, random: false },
  },
  // A retry's due time → its delivery, with consumers keeping up (c4-nack's are saturated by its nacks).
  {
    queue: 't1-nack',
    workers: 1,
    ids: 'server',
    nackFirstAttempt: true,
    paced: { perSecond: 10, batch: 1, messages: 100 },
  },
];

/** The runs the figures come from. */
export const RUN = {
  /** 4 workers, server-assigned ids: the headline, set beside SQS and BullMQ. */
  headline: 'c4',
  producerIds: 'c4-ids',
  failedAttempt: 'c4-nack',
  contended: 'c16',
  trickle: 't1',
  trickleOrdered: 't1-ordered',
  paced: 'c4-paced',
  retried: 't1-nack',
  fastUnderLoad: 'c4-always',
  ordered: 'c4-ordered',
  orderedHot: 'c4-ordered-hot',
  orderedPaced: 'c4-ordered-paced',
  orderedFailedAttempt: 'c4-ordered-nack',
} as const;

/** The runs that differ from each other only in their number of workers (set beside BullMQ's). */
export function plainRuns<T extends { queue: string }>(runs: readonly T[]): T[] {
  return runs.filter((r) => {
    const spec = END_TO_END_RUNS.find((s) => s.queue === r.queue);
    return (
      spec?.ids === 'server' && !spec.nackFirstAttempt && !spec.paced && !spec.fastAdmission && !spec.ordered
    );
  });
}

export function describeRun(spec: EndToEndSpec): string {
  const ids = spec.ids === 'server' ? 'server ids' : 'producer ids';
  const nack = spec.nackFirstAttempt ? ', each nacked once then acked' : '';
  const paced = spec.paced ? `, paced ${spec.paced.perSecond} msg/s in ${spec.paced.batch}s` : '';
  const fast = spec.fastAdmission ? `, fast_admission ${spec.fastAdmission}` : '';
  const ordered = spec.ordered ? `, ordered: ${describeKeys(spec.ordered)}` : '';
  const perKey = spec.maxPerKey ? `, max_per_key ${spec.maxPerKey}` : '';
  return `${spec.workers} worker(s), ${ids}${nack}${paced}${fast}${ordered}${perKey}`;
}

function describeKeys(keys: OrderedKeys): string {
  const spread = `${keys.keys} keys${keys.random ? ' at random' : ' in turn'}`;
  return keys.hotShare ? `${keys.hotShare * 100} % on one key, the rest ${spread}` : spread;
}

/** A phase after the end-to-end runs that failed: reported as such, so the runs measured before it are kept. */
export interface PhaseFailure {
  failed: string;
}

/** The backlog phase: receive+ack behind SMALL_BACKLOG messages, and behind --backlog. */
export const SMALL_BACKLOG = 1000;
/**
 * The backlog goal is stated for 100,000, so it is --backlog's default. Producing them takes
 * minutes on 2 cores: the phase dominates a default run.
 */
export const GOAL_BACKLOG = 100_000;
