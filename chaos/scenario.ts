import { setTimeout as sleep } from 'node:timers/promises';
import { LeaseqClient } from '../client/index.js';
import { AdminApi } from './admin.js';
import {
  checkInvariants,
  type EndState,
  emptyAfterDrain,
  expectedLives,
  groupBy,
  type Invariant,
  type Life,
  settled,
} from './checks.js';
import { Consumer, type ConsumerBehaviour } from './consumers.js';
import { countFigures, type Figures } from './figures.js';
import type { History } from './history.js';
import { checkJobs } from './job-checks.js';
import { type JobsEnd, OperatorJobs } from './jobs.js';
import { Producer } from './producers.js';
import { checkPushCalls, handledIds, type PushFigures, pushFigures, readPushCalls } from './push-calls.js';
import type { Random } from './random.js';
import { CHAOS_PUSH, CHAOS_TENANT, QUEUES } from './tenant.js';

/**
 * One chaos run's shape, whatever disrupts it: producers on three queues for a while, pull
 * consumers on two of them and the runtime's Lambda consumer on the third (ordered, push), with
 * a disruption running alongside (kills, fault storms) and an operator's replay and redrive of
 * the unordered queue (jobs.ts); then every message sent is produced until the log has it, the
 * jobs finish, the consumers drain the queues (acking everything, releasing parked keys) until
 * each accepted message and replayed copy is acked, dead or handled, and the history is checked.
 */

export interface ScenarioOptions {
  baseUrl: string;
  adminKey: string;
  random: Random;
  history: History;
  durationMs: number;
  /** New messages per second, per queue. */
  ratePerSecond: number;
  /** Keys of each ordered queue. */
  keys: number;
  consumersPerQueue: number;
  /**
   * How long the producers may take to get what is pending into the log, and then the drain to
   * settle everything, before what is left counts as unresolved or lost.
   */
  drainTimeoutMs: number;
  log: (line: string) => void;
  /** Runs alongside the workload until `until` (epoch ms), then resolves. */
  disrupt: (until: number) => Promise<void>;
  /** Between the workload and the drain: the disruption ends for good (faults off). */
  beforeDrain?: () => void | Promise<void>;
  /** Where the push queue's Lambda consumer writes its calls (push-consumer.ts). */
  pushCallsFile: string;
}

/** The workload's shape, the same for a crash run and a fault run. */
export type Workload = Pick<
  ScenarioOptions,
  'durationMs' | 'ratePerSecond' | 'keys' | 'consumersPerQueue' | 'drainTimeoutMs'
>;

export function workloadOf(o: Workload): Workload {
  return {
    durationMs: o.durationMs,
    ratePerSecond: o.ratePerSecond,
    keys: o.keys,
    consumersPerQueue: o.consumersPerQueue,
    drainTimeoutMs: o.drainTimeoutMs,
  };
}

export interface ScenarioResult {
  invariants: Invariant[];
  figures: Figures;
  push: PushFigures;
  jobs: JobsEnd;
  drainMs: number;
  parkedKeysSkipped: number;
}

/** Each request goes once (the producers and consumers retry themselves, and record each try). */
const CLIENT = { maxRetries: 0, timeoutMs: 30_000 };
const DRAIN_POLL_MS = 1000;
/**
 * The drain gives up early when nothing settled for this long: a message comes back within a
 * few seconds (2 s lease, 1 s backoff) even on a loaded machine, so what is left is stuck.
 */
const DRAIN_STALL_MS = 60_000;
/** A message whose ack went unanswered is asked about again at most this often. */
const TRACE_EVERY_MS = 3000;
/** At most this many still-unsettled messages are traced for the report. */
const TRACED_FOR_REPORT = 50;

const BEHAVIOUR: Record<string, ConsumerBehaviour> = {
  // Enough dead letters that a short run's redrive has some to move.
  [QUEUES.unordered]: { nack: 0.05, deadLetter: 0.04, slowAck: 0.03, drop: 0.02 },
  // No nack to the DLQ: a parked key would hold its later messages for the rest of the run (until
  // the drain skips it), and order is what this queue is here to exercise.
  [QUEUES.ordered]: { nack: 0.05, deadLetter: 0, slowAck: 0.03, drop: 0.02 },
};

export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const client = new LeaseqClient({ baseUrl: o.baseUrl, apiKey: o.adminKey, ...CLIENT });
  const admin = new AdminApi(o.baseUrl, o.adminKey);
  const producers = [
    new Producer({ ...common(o, client), queue: QUEUES.unordered, name: 'w' }),
    new Producer({ ...common(o, client), queue: QUEUES.ordered, name: 'o', keys: o.keys, hotKey: true }),
    new Producer({ ...common(o, client), queue: QUEUES.pushed, name: 'p', keys: o.keys, hotKey: true }),
  ];
  const consumers = [QUEUES.unordered, QUEUES.ordered].flatMap((queue) =>
    Array.from(
      { length: o.consumersPerQueue },
      (_, i) =>
        new Consumer({
          client,
          history: o.history,
          random: o.random.fork(),
          queue,
          name: `${queue}-c${i}`,
          behaviour: BEHAVIOUR[queue] as ConsumerBehaviour,
          leaseSeconds: CHAOS_TENANT.queues[queue]?.lease_seconds ?? 2,
        }),
    ),
  );

  const jobs = new OperatorJobs({ admin, history: o.history, queue: QUEUES.unordered, log: o.log });

  const begin = Date.now();
  const until = begin + o.durationMs;
  o.history.mark('workload');
  for (const w of [...producers, ...consumers]) w.start();
  await Promise.all([o.disrupt(until), jobs.run(begin, until)]);
  await sleep(Math.max(0, until - Date.now()));
  await o.beforeDrain?.();

  o.history.mark('finishing produce');
  const unresolved = (await Promise.all(producers.map((p) => p.finish(o.drainTimeoutMs)))).flat();
  if (unresolved.length) o.log(`${unresolved.length} messages never answered accepted: not checked`);
  // The consumers go on settling what the jobs move; the drain then settles every copy too.
  if (!(await jobs.finished(Date.now() + o.drainTimeoutMs))) o.log('a job still running: not done in time');

  o.history.mark('drain');
  o.log('draining');
  const drainStart = Date.now();
  for (const c of consumers) c.drain();
  const { parkedKeysSkipped, ...ended } = await drain(o, admin);
  await Promise.all(consumers.map((c) => c.stop()));
  const drainMs = Date.now() - drainStart;
  o.history.mark('drained');

  const end: EndState = { ...ended, unsettledStates: new Map() };
  for (const { life, id, queue } of unsettled(o.history, end).slice(0, TRACED_FOR_REPORT)) {
    end.unsettledStates.set(life, await admin.state(queue, id));
  }
  const jobsEnd = await jobs.end();
  const calls = readPushCalls(o.pushCallsFile);
  const left = await Promise.all([
    ...[QUEUES.unordered, QUEUES.ordered].map(async (q) => ({ name: q, ...(await admin.holding(q)) })),
    admin
      .holding(CHAOS_PUSH.queue, CHAOS_PUSH.consumer)
      .then((h) => ({ name: `${CHAOS_PUSH.queue}?consumer=${CHAOS_PUSH.consumer}`, ...h })),
  ]);
  return {
    invariants: [
      ...checkInvariants(o.history, end, QUEUES.ordered),
      ...checkPushCalls(o.history, calls),
      ...checkJobs(o.history, end, jobsEnd),
      emptyAfterDrain(left),
    ],
    figures: countFigures(o.history, end),
    push: pushFigures(calls),
    jobs: jobsEnd,
    drainMs,
    parkedKeysSkipped,
  };
}

function common(o: ScenarioOptions, client: LeaseqClient) {
  return { client, history: o.history, random: o.random.fork(), ratePerSecond: o.ratePerSecond };
}

/**
 * Waits while the consumers ack, until every accepted message and replayed copy is acked or dead
 * (or the drain times out, or stalls). Parked keys are skipped (the held messages behind a dead
 * one must still be delivered), and a life whose ack went unanswered is settled by its trace: it
 * will not come back if that ack landed.
 */
async function drain(o: ScenarioOptions, admin: AdminApi): Promise<Settled & { parkedKeysSkipped: number }> {
  const deadline = Date.now() + o.drainTimeoutMs;
  const end: Settled = { dead: new Map(), ackedByTrace: new Set(), handled: new Set() };
  const tracedAt = new Map<string, number>();
  let parkedKeysSkipped = 0;
  let [lastRemaining, movedAt] = [Number.POSITIVE_INFINITY, Date.now()];
  for (;;) {
    end.dead = new Map([
      ...(await admin.deadLetters(QUEUES.unordered)),
      ...(await admin.deadLetters(QUEUES.ordered)),
    ]);
    parkedKeysSkipped += await admin.skipParkedKeys(QUEUES.ordered);
    end.handled = handledIds(readPushCalls(o.pushCallsFile));
    const left = unsettled(o.history, end);
    const byLife = groupBy(o.history.deliveries, (d) => d.life);
    for (const { life, id, queue, replayId } of left) {
      const unanswered = (byLife.get(life) ?? []).some(
        (d) => d.settle?.kind === 'ack' && d.settle.outcome === 'unknown',
      );
      if (!unanswered || Date.now() - (tracedAt.get(life) ?? 0) < TRACE_EVERY_MS) continue;
      tracedAt.set(life, Date.now());
      // The trace shows the id's latest life: only that one's ack is known.
      const trace = await admin.trace(queue, id);
      if (trace.state === 'acked' && trace.replayId === replayId) end.ackedByTrace.add(life);
    }
    // A pass that traced many lives took a while: what the Lambda consumer handled meanwhile counts.
    end.handled = handledIds(readPushCalls(o.pushCallsFile));
    const remaining = unsettled(o.history, end).length;
    if (remaining !== lastRemaining) [lastRemaining, movedAt] = [remaining, Date.now()];
    if (remaining === 0 || Date.now() > deadline || Date.now() - movedAt > DRAIN_STALL_MS)
      return { ...end, parkedKeysSkipped };
    await sleep(DRAIN_POLL_MS);
  }
}

type Settled = Pick<EndState, 'dead' | 'ackedByTrace' | 'handled'>;

/** Accepted messages and replayed copies not yet known to be acked or dead. */
function unsettled(history: History, end: Settled): Life[] {
  const byLife = groupBy(history.deliveries, (d) => d.life);
  return expectedLives(history).filter(({ life }) => !settled(life, byLife, end));
}
