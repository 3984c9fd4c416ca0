import type { BacklogReport } from './backlog.js';
import type { PeerReport } from './bullmq.js';
import { type FixedMonthly, fixedTotal, type RunCost, type SqsCost } from './cost.js';
import type { FixedTenant } from './deployed-stack.js';
import { type IsolationReport, slowdown } from './isolation.js';
import { RESHARD_DIP_SHARE, type ReshardingReport, reshardBroken } from './resharding.js';
import { END_TO_END_RUNS, GOAL_BACKLOG, type PhaseFailure, RUN } from './runs.js';
import type { StreamMode } from './runtime.js';
import type { ScalingReport } from './scaling.js';
import { formatNumber, formatTable, INDEX_NOT_REPORTED } from './stats.js';

/**
 * The cost figures, each measured beside its goal (docs/performance.md): the table that judges
 * the lease layer.
 * Per delivered message, all-in: base-table and index writes, failed conditional writes, reads,
 * and in the dollars every request of every service (bench/cost.ts).
 */

export type Met = 'yes' | 'no' | '?' | '-';

export interface GoalRow {
  id: string;
  figure: string;
  /** The figure as measured; null when this run did not measure it. */
  value: number | null;
  /** As printed: "≥ 4.4" where the emulator left units out, a reason where not measured. */
  measured: string;
  goal: string;
  met: Met;
}

export interface GoalInputs {
  costs: readonly RunCost[];
  throughput: readonly { queue: string; messagesPerSecond: number }[];
  /** Latency: produce sent → first delivery, and a retry's due time → its delivery. */
  latency: readonly {
    queue: string;
    latencyMs?: { p50: number; p99: number };
    retryLatencyMs?: { p50: number; p99: number };
  }[];
  sqs: readonly SqsCost[];
  /** What a tenant costs a month with no messages (bench/cost.ts fixedMonthly). */
  fixed: readonly FixedMonthly[];
  /** Runs that completed but broke their queue's promises (per-key order): their rows show that, not figures. */
  failedRuns: readonly { queue: string; failed: string }[];
  /** Undefined when the phase was skipped. */
  scaling: ScalingReport | PhaseFailure | undefined;
  /** Undefined when the phase was skipped. */
  backlog: BacklogReport | PhaseFailure | undefined;
  peer: PeerReport | PhaseFailure | undefined;
  /** Undefined when the phase was skipped. */
  isolation?: IsolationReport | PhaseFailure | undefined;
  /** Undefined when the phase was skipped. */
  resharding?: ReshardingReport | PhaseFailure | undefined;
  /** The goal rows of an earlier run (--baseline), for the before/after and the throughput goal. */
  baseline: readonly GoalRow[] | undefined;
  /** Latency measured as AWS runs it (--as-aws): its rows say so, under ids of their own. */
  asAws?: boolean;
  /** How the queues' streams read (bench/runtime.ts StreamMode): other than busy-time fan-out, the latency rows say so, under ids of their own. */
  streams?: StreamMode;
}

const LIMITS = {
  /** One queue's flood may not slow another's p99 past this. */
  isolationSlowdown: 2,
  writeUnitsServerIds: 0.5,
  writeUnitsProducerIds: 1.5,
  readUnits: 1.0,
  usdPerMillion: 1.0,
  writeUnitsOrdered: 0.6,
  writeUnitsOrderedHot: 0.8,
  usdPerMillionOrdered: 1.2,
  /** An ordered run's msg/s over c4's, both measured in the same invocation. */
  orderedOverHeadline: 0.7,
  orderedHotOverHeadline: 0.5,
  failedConditionalWrites16: 0.1,
  fixedOneQueue: 12,
  fixedTenQueues: 15,
  writeUnitsFailedAttempt: 4,
  backlogRatio: 1.1,
  throughputOverBaseline: 3,
  latencyP50Ms: 30,
  latencyP99Ms: 100,
  /** As AWS runs it (--as-aws): each request in an instance of its own, workers on the wake channel. */
  asAwsLatencyP50Ms: 60,
  asAwsLatencyP99Ms: 150,
  retryLatencyP99Ms: 1500,
} as const;

/** At most `limit`; a lower bound (units left out) can only show that a goal is missed. */
function atMost(value: number, limit: number, exact: boolean): Met {
  if (value > limit) return 'no';
  return exact ? 'yes' : '?';
}

function notMeasured(id: string, figure: string, goal: string, why: string): GoalRow {
  return { id, figure, value: null, measured: why, goal, met: '-' };
}

/** A run that broke its queue's promises meets none of its goals, whatever its figures. */
function failedRow(id: string, figure: string, goal: string, failed: string): GoalRow {
  return { id, figure, value: null, measured: `run failed: ${failed}`, goal, met: 'no' };
}

function failureOf(inputs: GoalInputs, run: string): string | undefined {
  return inputs.failedRuns.find((f) => f.queue === run)?.failed;
}

export function goalRows(inputs: GoalInputs): GoalRow[] {
  const cost = (run: string) => inputs.costs.find((c) => c.run === run);
  const shown = (n: number, exact: boolean, unit = '') => `${exact ? '' : '≥ '}${unit}${formatNumber(n)}`;
  const perMessage = (
    id: string,
    figure: string,
    run: string,
    pick: (c: RunCost) => number,
    limit: number,
    options: { exact?: (c: RunCost) => boolean; dollars?: boolean; goal?: string } = {},
  ): GoalRow => {
    const unit = options.dollars ? '$' : '';
    const goal = options.goal ?? `≤ ${unit}${limit.toFixed(2)}`;
    const failed = failureOf(inputs, run);
    if (failed) return failedRow(id, `${figure} (${run})`, goal, failed);
    const c = cost(run);
    if (!c) return notMeasured(id, `${figure} (${run})`, goal, 'not run');
    const value = pick(c);
    const exact = options.exact?.(c) ?? true;
    return {
      id,
      figure: `${figure} (${run})`,
      value,
      measured: shown(value, exact, unit),
      goal,
      met: atMost(value, limit, exact),
    };
  };
  const indexReported = (c: RunCost) => c.indexReported;
  /** All-in write units: a lower bound where the emulator reports no index writes. */
  const writeUnits = (id: string, figure: string, run: string, limit: number) =>
    perMessage(id, figure, run, (c) => c.perMessage.writeUnitsAllIn, limit, { exact: indexReported });
  const readUnits = (id: string, figure: string, run: string) =>
    perMessage(id, figure, run, (c) => c.perMessage.readUnits, LIMITS.readUnits);
  const dollars = (id: string, figure: string, run: string, limit: number, beside: string) =>
    perMessage(id, figure, run, (c) => c.total, limit, {
      exact: indexReported,
      dollars: true,
      goal: `≤ $${limit.toFixed(2)} (${beside})`,
    });
  const sqs = (queue: SqsCost['queue'], mode: SqsCost['mode']) =>
    inputs.sqs.find((s) => s.queue === queue && s.mode === mode)?.usdPerMillion ?? Number.NaN;
  return [
    writeUnits('wru-server-ids', 'WRU / msg, server ids', RUN.headline, LIMITS.writeUnitsServerIds),
    writeUnits('wru-producer-ids', 'WRU / msg, producer ids', RUN.producerIds, LIMITS.writeUnitsProducerIds),
    readUnits('rru', 'RRU / msg', RUN.headline),
    dollars(
      'usd-per-million',
      '$ / million msgs all-in',
      RUN.headline,
      LIMITS.usdPerMillion,
      `SQS std batched $${sqs('standard', 'batched').toFixed(2)}, FIFO unbatched $${sqs('FIFO', 'unbatched').toFixed(2)}`,
    ),
    writeUnits('wru-ordered', 'WRU / msg, ordered', RUN.ordered, LIMITS.writeUnitsOrdered),
    writeUnits(
      'wru-ordered-hot',
      'WRU / msg, ordered, a hot key',
      RUN.orderedHot,
      LIMITS.writeUnitsOrderedHot,
    ),
    readUnits('rru-ordered', 'RRU / msg, ordered', RUN.ordered),
    readUnits('rru-ordered-hot', 'RRU / msg, ordered, a hot key', RUN.orderedHot),
    dollars(
      'usd-per-million-ordered',
      '$ / million msgs all-in, ordered',
      RUN.ordered,
      LIMITS.usdPerMillionOrdered,
      `SQS FIFO batched $${sqs('FIFO', 'batched').toFixed(2)}`,
    ),
    writeUnits(
      'wru-failed-attempt',
      'WRU / msg, nack → retry → ack',
      RUN.failedAttempt,
      LIMITS.writeUnitsFailedAttempt,
    ),
    writeUnits(
      'wru-failed-attempt-ordered',
      'WRU / msg, nack → retry → ack, ordered',
      RUN.orderedFailedAttempt,
      LIMITS.writeUnitsFailedAttempt,
    ),
    perMessage(
      'failed-conditional-writes-16',
      'failed conditional writes / msg, 16 workers',
      RUN.contended,
      (c) => c.perMessage.failedConditionalWrites,
      LIMITS.failedConditionalWrites16,
    ),
    backlogRow(inputs.backlog),
    throughputRow(inputs),
    overHeadlineRow(inputs, 'throughput-ordered', RUN.ordered, LIMITS.orderedOverHeadline),
    overHeadlineRow(inputs, 'throughput-ordered-hot', RUN.orderedHot, LIMITS.orderedHotOverHeadline),
    peerRow(inputs),
    ...latencyRows(inputs),
    scalingRow(inputs.scaling),
    ...isolationRows(inputs.isolation),
    ...reshardRows(inputs.resharding),
    fixedRow(
      inputs,
      'fixed-one-queue',
      'fixed $ / month, one queue, no worker',
      'oneQueue',
      LIMITS.fixedOneQueue,
    ),
    fixedRow(
      inputs,
      'fixed-ten-queues-two-workers',
      'fixed $ / month, ten queues, two idle workers',
      'tenQueues',
      LIMITS.fixedTenQueues,
    ),
  ];
}

/** The stack as deployed (synthesized), priced idle: what a team pays before its first message. */
function fixedRow(inputs: GoalInputs, id: string, figure: string, tenant: FixedTenant, limit: number) {
  const value = fixedTotal(inputs.fixed, tenant);
  return {
    id,
    figure,
    value,
    measured: `$${value.toFixed(2)}`,
    goal: `≤ $${limit}`,
    met: atMost(value, limit, true),
  };
}

/** Quiet's p99 beside noisy's flood, and beside noisy at its quota, each ÷ its p99 alone. */
function isolationRows(isolation: IsolationReport | PhaseFailure | undefined): GoalRow[] {
  const phases = [
    ['isolation-flood', "quiet's p99 ÷ alone, noisy flooded past its quota", 'flood'],
    ['isolation-at-quota', "quiet's p99 ÷ alone, noisy at its quota with a backlog", 'atQuota'],
  ] as const;
  const goal = `≤ ${LIMITS.isolationSlowdown}×`;
  return phases.map(([id, figure, phase]) => {
    if (!isolation) return notMeasured(id, figure, goal, 'skipped (--only)');
    if ('failed' in isolation) return notMeasured(id, figure, goal, 'phase failed (see above)');
    const ratios = slowdown(isolation);
    const value = ratios[phase];
    // The same flood refused by a bare server elsewhere: what it costs this machine without leaseq.
    const control = phase === 'flood' ? `; at a bare server ${ratios.floodElsewhere.toFixed(2)}×` : '';
    return {
      id,
      figure,
      value,
      measured: `${value.toFixed(2)}× (${Math.round(isolation[phase].p99)} / ${Math.round(isolation.alone.p99)} ms${control})`,
      goal,
      met: atMost(value, LIMITS.isolationSlowdown, true),
    };
  });
}

/**
 * An ordered queue's stream resharded under load: per change, the lowest second of acks after it
 * ÷ the mean before; how long its children's keys waited for the parents to finish; and nothing
 * lost or out of order across both changes.
 */
function reshardRows(resharding: ReshardingReport | PhaseFailure | undefined): GoalRow[] {
  const dipGoal = `≥ ${RESHARD_DIP_SHARE}×`;
  const dipFigure = (change: string) => `lowest acks/s after a ${change} ÷ the mean before, ordered`;
  const releaseFigure = 'reshard done → last parent finished, ordered (split; merge)';
  const promisesFigure = 'messages lost; keys out of order, across split and merge';
  if (!resharding || 'failed' in resharding) {
    const why = resharding ? 'phase failed (see above)' : 'skipped (--only)';
    return [
      notMeasured('reshard-split-dip', dipFigure('split'), dipGoal, why),
      notMeasured('reshard-merge-dip', dipFigure('merge'), dipGoal, why),
      notMeasured('reshard-release-ms', releaseFigure, 'printed', why),
      notMeasured('reshard-lost-or-out-of-order', promisesFigure, '0; 0', why),
    ];
  }
  const dipRow = (id: string, change: string): GoalRow => {
    const c = resharding.changes.find((x) => x.change === change);
    if (!c) return notMeasured(id, dipFigure(change), dipGoal, 'not run');
    return {
      id,
      figure: `${dipFigure(change)} at ${resharding.rate} msg/s`,
      value: c.ratio,
      measured: `${c.ratio.toFixed(2)}× (${c.lowest} ÷ ${formatNumber(c.before)}; lowest before: ${c.lowestBefore})`,
      goal: dipGoal,
      met: c.ratio >= RESHARD_DIP_SHARE ? 'yes' : 'no',
    };
  };
  const releases = resharding.changes.map((c) => c.releaseMs);
  const broken = reshardBroken(resharding);
  return [
    dipRow('reshard-split-dip', 'split'),
    dipRow('reshard-merge-dip', 'merge'),
    {
      id: 'reshard-release-ms',
      figure: releaseFigure,
      value: releases.every((ms) => ms !== null) ? Math.max(...(releases as number[])) : null,
      measured: releases.map((ms) => (ms === null ? 'not finished' : `${Math.round(ms)} ms`)).join('; '),
      goal: 'printed',
      met: '-',
    },
    {
      id: 'reshard-lost-or-out-of-order',
      figure: promisesFigure,
      value: resharding.unacked + resharding.orderViolations,
      measured: broken.length ? broken.join('; ') : '0; 0',
      goal: '0; 0',
      met: broken.length ? 'no' : 'yes',
    },
  ];
}

/** A rebalance storm: seconds after a worker count change that fell below 80 % of before. */
function scalingRow(scaling: ScalingReport | PhaseFailure | undefined): GoalRow {
  const id = 'scaling-dips';
  const figure = 'dips when workers go 1 → 16 in one run';
  const goal = 'none';
  if (!scaling) return notMeasured(id, figure, goal, 'skipped (--only)');
  if ('failed' in scaling) return notMeasured(id, figure, goal, 'phase failed (see above)');
  const dips = scaling.changes.filter((c) => c.dip);
  const unmeasured = scaling.changes.filter((c) => c.ranOut).map((c) => `→ ${c.workers}`);
  if (unmeasured.length && !dips.length)
    return notMeasured(id, figure, goal, `backlog ran out around ${unmeasured.join(', ')}`);
  return {
    id,
    figure,
    value: dips.length,
    measured: dips.length ? `${dips.length} (${dips.map((d) => `→ ${d.workers}`).join(', ')})` : '0',
    goal,
    met: dips.length ? 'no' : 'yes',
  };
}

/** The latency figures (at the bench's poller cadence: a shard read a second, as on AWS). */
function latencyRows(inputs: GoalInputs): GoalRow[] {
  const row = (
    id: string,
    figure: string,
    run: string,
    pick: (r: GoalInputs['latency'][number]) => number | undefined,
    limit: number,
  ): GoalRow => {
    const goal = `≤ ${limit} ms`;
    if (inputs.asAws) {
      id = `${id}-as-aws`;
      figure = `${figure}, as AWS runs it`;
    }
    if (inputs.streams === 'always') {
      id = `${id}-fan-out`;
      figure = `${figure}, on enhanced fan-out`;
    } else if (inputs.streams === 'polled') {
      id = `${id}-polled`;
      figure = `${figure}, polled`;
    }
    const failed = failureOf(inputs, run);
    if (failed) return failedRow(id, `${figure} (${run})`, goal, failed);
    const value = pick(inputs.latency.find((r) => r.queue === run) ?? { queue: run });
    if (value === undefined) return notMeasured(id, `${figure} (${run})`, goal, 'not run');
    return {
      id,
      figure: `${figure} (${run})`,
      value,
      measured: `${formatNumber(value)} ms`,
      goal,
      met: atMost(value, limit, true),
    };
  };
  // Each run's p50 and p99 of produce sent → first delivery.
  const runs: [id: string, label: string, run: string][] = [
    ['', 'burst', RUN.headline],
    ['-paced', '100 msg/s', RUN.paced],
    ['-always', '100 msg/s, fast_admission always', RUN.fastUnderLoad],
    ['-trickle', '10 msg/s', RUN.trickle],
    ['-ordered', '10 msg/s, ordered', RUN.trickleOrdered],
    ['-ordered-paced', '100 msg/s, ordered, fast_admission always', RUN.orderedPaced],
  ];
  return [
    ...runs.flatMap(([id, label, run]) => [
      row(
        `latency${id}-p50`,
        `produce → receive p50, ${label}`,
        run,
        (r) => r.latencyMs?.p50,
        inputs.asAws ? LIMITS.asAwsLatencyP50Ms : LIMITS.latencyP50Ms,
      ),
      row(
        `latency${id}-p99`,
        `produce → receive p99, ${label}`,
        run,
        (r) => r.latencyMs?.p99,
        inputs.asAws ? LIMITS.asAwsLatencyP99Ms : LIMITS.latencyP99Ms,
      ),
    ]),
    row(
      'retry-latency-p99',
      'retry due → delivered p99',
      RUN.retried,
      (r) => r.retryLatencyMs?.p99,
      LIMITS.retryLatencyP99Ms,
    ),
  ];
}

function backlogRow(backlog: BacklogReport | PhaseFailure | undefined): GoalRow {
  const id = 'backlog-units-ratio';
  const goal = `≤ ${LIMITS.backlogRatio}×`;
  const figure = (large: number) =>
    `units / msg, backlog ${large.toLocaleString('en-US')} ÷ 1,000 (worse of WRU, RRU)`;
  if (!backlog) return notMeasured(id, figure(GOAL_BACKLOG), goal, 'skipped (--backlog 0)');
  if ('failed' in backlog) return notMeasured(id, figure(GOAL_BACKLOG), goal, 'phase failed (see above)');
  const small = backlog.runs[0];
  const large = backlog.runs.at(-1);
  const ratio = backlog.ratios.unitsPerMessage;
  if (!small || !large || small === large || ratio === undefined) {
    return notMeasured(id, figure(GOAL_BACKLOG), goal, 'one size only');
  }
  const exact = large.perMessage.indexWriteUnits !== null;
  return {
    id,
    figure: `${figure(large.backlog)}${large.backlog === GOAL_BACKLOG ? '' : ` (goal: ${GOAL_BACKLOG.toLocaleString('en-US')})`}`,
    value: ratio,
    measured: `${ratio.toFixed(2)}×${exact ? '' : ' (no index units)'}`,
    goal,
    met: atMost(ratio, LIMITS.backlogRatio, exact),
  };
}

function throughputRow(inputs: GoalInputs): GoalRow {
  const id = 'throughput';
  const figure = `end-to-end msg/s (${RUN.headline})`;
  const run = inputs.throughput.find((r) => r.queue === RUN.headline);
  const before = inputs.baseline?.find((r) => r.id === id)?.value ?? null;
  const goal =
    before === null
      ? `≥ ${LIMITS.throughputOverBaseline}× baseline (--baseline <results.json>)`
      : `≥ ${LIMITS.throughputOverBaseline}× ${formatNumber(before)} = ${formatNumber(LIMITS.throughputOverBaseline * before)}`;
  if (!run) return notMeasured(id, figure, goal, 'not run');
  const value = run.messagesPerSecond;
  const met: Met = before === null ? '?' : value >= LIMITS.throughputOverBaseline * before ? 'yes' : 'no';
  return { id, figure, value, measured: formatNumber(value), goal, met };
}

/**
 * A run's msg/s over the headline's: only from one invocation, as the machine's speed swings
 * between invocations by more than the ratios the goals ask of.
 */
function overHeadlineRow(inputs: GoalInputs, id: string, run: string, limit: number): GoalRow {
  const figure = `end-to-end msg/s ${run} ÷ ${RUN.headline}, same run`;
  const goal = `≥ ${limit}×`;
  const failed = failureOf(inputs, run);
  if (failed) return failedRow(id, figure, goal, failed);
  const of = (queue: string) => inputs.throughput.find((r) => r.queue === queue);
  const [over, under] = [of(run), of(RUN.headline)];
  if (!over || !under) {
    const missing = [run, RUN.headline].filter((q) => !of(q));
    return notMeasured(id, figure, goal, `not measured: ${missing.join(' and ')} not run`);
  }
  const value = over.messagesPerSecond / under.messagesPerSecond;
  return {
    id,
    figure,
    value,
    measured: `${formatNumber(value)}× (${formatNumber(over.messagesPerSecond)} ÷ ${formatNumber(under.messagesPerSecond)})`,
    goal,
    met: value >= limit ? 'yes' : 'no',
  };
}

function peerRow(inputs: GoalInputs): GoalRow {
  const id = 'throughput-over-bullmq';
  const figure = `end-to-end msg/s ÷ BullMQ's (${RUN.headline})`;
  const goal = 'printed';
  const { peer } = inputs;
  if (!peer) return notMeasured(id, figure, goal, 'skipped (--skip-peer)');
  if ('failed' in peer) return notMeasured(id, figure, goal, 'peer failed (see above)');
  if ('skipped' in peer) return notMeasured(id, figure, goal, 'skipped: no redis-server (see above)');
  const leaseq = inputs.throughput.find((r) => r.queue === RUN.headline);
  const workers = END_TO_END_RUNS.find((r) => r.queue === RUN.headline)?.workers;
  const bullmq = peer.runs.find((r) => r.workers === workers);
  if (!leaseq || !bullmq) return notMeasured(id, figure, goal, 'not run');
  const value = leaseq.messagesPerSecond / bullmq.messagesPerSecond;
  return {
    id,
    figure,
    value,
    measured: `${formatNumber(value)}× (BullMQ ${formatNumber(bullmq.messagesPerSecond)})`,
    goal,
    met: '-',
  };
}

export function printGoals(rows: readonly GoalRow[], baseline: readonly GoalRow[] | undefined): void {
  console.log('\nGoals: 1 KB payloads, produce 10, receive 10, ack 10; per delivered message, all-in:\n');
  const before = (id: string) => baseline?.find((r) => r.id === id)?.measured ?? '-';
  console.log(
    formatTable(
      ['figure', ...(baseline ? ['baseline'] : []), 'measured', 'goal', 'met?'],
      rows.map((r) => [r.figure, ...(baseline ? [before(r.id)] : []), r.measured, r.goal, r.met]),
    ),
  );
  if (rows.some((r) => r.measured.startsWith('≥') || r.measured.includes('no index units'))) {
    console.log(
      `\n≥ / "no index units": index WRU ${INDEX_NOT_REPORTED}; such a figure leaves them out, so "?" where it is ` +
        'within its goal.',
    );
  }
}
