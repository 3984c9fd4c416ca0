import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BenchFigures } from '../cli/sizing.js';
import type { MeterSnapshot } from '../functions/aws/meter.js';
import { parseTenantConfig } from '../functions/core/config.js';
import {
  DYNAMODB_EMULATOR_ENV,
  type DynamoDbEmulator,
  parseDynamoDbEmulator,
} from '../infra/local/emulators.js';
import { FAN_OUT_POLL_MS } from '../infra/local/event-source.js';
import type { Runtime } from '../infra/local/runtime.js';
import { BACKLOG_DEFAULTS, type BacklogReport, printBacklog, runBacklogIsolated } from './backlog.js';
import { type PeerReport, printPeer, runPeer } from './bullmq.js';
import {
  type Background,
  COST_NOTES,
  type FixedMonthly,
  fixedMonthly,
  printCost,
  type RunCost,
  runCost,
  type SqsCost,
  sqsCosts,
} from './cost.js';
import { type DeployedTenant, deployedTenants, type FixedTenant } from './deployed-stack.js';
import { type GoalRow, goalRows, printGoals } from './goals.js';
import { ApiTally, type ApiTallySnapshot, type Endpoint } from './http.js';
import { type IdleTick, measureIdleTick } from './idle-tick.js';
import { ISOLATION, type IsolationReport, printIsolation, runIsolation } from './isolation.js';
import { PRICES, PRICES_AS_OF, REGION } from './prices.js';
import { CostProbe, type ProbeSnapshot } from './probe.js';
import {
  printResharding,
  RESHARD,
  RESHARD_RATE,
  type ReshardingReport,
  reshardBroken,
  runResharding,
} from './resharding.js';
import {
  describeRun,
  END_TO_END_RUNS,
  GOAL_BACKLOG,
  type PhaseFailure,
  PRODUCE_RUNS,
  plainRuns,
  RUN,
  SHARDS,
  SMALL_BACKLOG,
} from './runs.js';
import { fanOutOf, onBusyStream, reportsIndexUnits, type StreamMode, startBenchRuntime } from './runtime.js';
import { printScaling, runScaling, SCALING_QUEUE, type ScalingReport } from './scaling.js';
import {
  formatTable,
  INDEX_NOT_REPORTED,
  operationRows,
  type PerMessage,
  percentile,
  perMessage,
} from './stats.js';
import { endToEnd, produce, WORKLOAD } from './workload.js';

/**
 * `npm run bench [-- --messages N] [--backlog N] [--skip-peer] [--dynamodb-local] [--baseline FILE]`:
 * throughput, latency and AWS cost per message of the local runtime, measured over its HTTP API
 * in the goals' workload (bench/workload.ts WORKLOAD), turned into dollars beside SQS; receive+ack
 * and memory behind a small and a large backlog; BullMQ on a local Redis for the same workload;
 * and at the end each cost and latency figure beside its goal (docs/performance.md). Writes
 * bench/results/<time>.json.
 *
 * --messages N       messages per produce and end-to-end run, and per BullMQ run (default 2000)
 * --backlog N        the large backlog of the backlog phase, beside 1,000 (default 100000; 0 skips it)
 * --skip-peer        no BullMQ phase
 * --dynamodb-local   AWS's DynamoDB Local (Java) instead of dynalite, which reports no index write
 *                    units; also LEASEQ_DYNAMODB=dynamodb-local
 * --baseline FILE    an earlier bench/results/*.json: its figures beside these, and the throughput goal
 * --only RUNS        only these produce and end-to-end runs, `scale`, `isolation` and `reshard` (comma-separated, e.g. c16,isolation)
 * --reshard-rate N   msg/s the reshard phase produces (default 100, what a 2-core machine carries after a split)
 * --fan-out          every run's stream on enhanced fan-out (`fan_out: true`): dispatch pushed, outside a shard's five reads a second
 * --polled           every run's stream polled (`fan_out: false`); by default each is the default's
 *                    `when_busy`, switched on for its run as the sweep switches a stream that busy
 */

/** The bench's tenant: a stream of its own per run, read as `mode` says (runtime.ts StreamMode). */
const tenantFile = (mode: StreamMode) => ({
  tenant: 'bench',
  queues: Object.fromEntries(
    [...PRODUCE_RUNS, ...END_TO_END_RUNS, { queue: SCALING_QUEUE }, { queue: WARM_UP.queue }].map((r) => [
      r.queue,
      {
        shards: SHARDS,
        ...fanOutOf(mode),
        ...('fastAdmission' in r && r.fastAdmission ? { fast_admission: r.fastAdmission } : {}),
        ...('ordered' in r && r.ordered ? { ordered: true } : {}),
        ...('maxPerKey' in r && r.maxPerKey ? { max_per_key: r.maxPerKey } : {}),
      },
    ]),
  ),
});
const ADMIN_KEY = 'bench-admin-key-0123456789';
const END_TO_END_TIMEOUT_MS = 5 * 60_000;
const SCALING_SECONDS_PER_STEP = 4;
/** Long enough for a few sweep passes (one a second), so the background rate is not one pass's luck. */
const BACKGROUND_SECONDS = 3;
const FIRST_SWEEP_MS = 1500;
/**
 * Unmeasured, before the end-to-end runs: the runtime's first seconds of receiving pay for its JIT
 * and empty caches, which a queue at 100 msg/s on AWS has long paid (as AWS runs it on fan-out, the
 * first run measured 77-111 / 246-580 ms where the same run measured later 54-56 / 130-155 ms).
 */
const WARM_UP = {
  queue: 'warm-up',
  workers: 4,
  ids: 'server',
  nackFirstAttempt: false,
  paced: { perSecond: 100, batch: 10 },
  messages: 300,
} as const;

interface RunResult {
  queue: string;
  description: string;
  messages: number;
  /** End-to-end runs. */
  workers?: number;
  seconds: number;
  messagesPerSecond: number;
  /** Produce runs: until dispatch had admitted every message into the lease window. */
  admittedAfterSeconds?: number;
  latencyMs?: { p50: number; p99: number };
  /** Failed-attempt runs: a retry's due time → its delivery. */
  retryLatencyMs?: { p50: number; p99: number };
  redelivered?: number;
  /** Ordered runs: first deliveries that came after a later message of their key was acked. */
  orderViolations?: number;
  /** A run that completed but broke what its queue promises: its figures are kept, its goals not met. */
  failed?: string;
  meter: MeterSnapshot;
  probe: ProbeSnapshot;
  api: ApiTallySnapshot;
  perMessage: PerMessage;
}

interface Report {
  date: string;
  machine: { cpus: number; cpuModel: string; node: string; platform: string };
  dynamodb: DynamoDbEmulator;
  workload: typeof WORKLOAD;
  messages: number;
  /** What the runtime asks of AWS with no traffic at all: the sweep and the shard pollers. */
  backgroundRequestsPerSecond: Record<string, number>;
  background: Background;
  idleTick: IdleTick;
  produce: RunResult[];
  endToEnd: RunResult[];
  cost: {
    region: string;
    pricesAsOf: string;
    prices: typeof PRICES;
    runs: RunCost[];
    sqs: SqsCost[];
    /** Each goal tenant's idle month: its stack as synthesized, its sweep, its idle workers. */
    fixedMonthly: FixedMonthly[];
  };
  /** Workers added 1 → 16 during one run (--only without `scale` skips it). */
  scaling?: ScalingReport | PhaseFailure;
  backlog?: BacklogReport | PhaseFailure;
  isolation?: IsolationReport | PhaseFailure;
  /** A stream split and merged under steady load (--only without `reshard` skips it). */
  resharding?: ReshardingReport | PhaseFailure;
  peer?: PeerReport | PhaseFailure;
  goals: GoalRow[];
  /** The file --baseline named. */
  baseline?: string;
  notes: string[];
}

interface Options {
  messages: number;
  backlog: number;
  peer: boolean;
  dynamodb: DynamoDbEmulator;
  baseline: { file: string; goals: GoalRow[] } | undefined;
  /** The produce and end-to-end runs to do (--only); all when undefined. */
  only: ReadonlySet<string> | undefined;
  /** --as-aws: each request as if in a Lambda instance of its own (no in-process hand-offs). */
  asAws: boolean;
  /** How the runs' streams read: --fan-out, --polled, or busy-time fan-out switched on (the default). */
  streams: StreamMode;
  /** msg/s the reshard phase produces (--reshard-rate). */
  reshardRate: number;
}

const SCOPE_NOTE =
  'Per-message figures include everything the runtime did during the run: dispatch admitting messages, ' +
  'the sweep (one pass a second over every queue) and the local shard pollers (Kinesis.GetRecords).';

const AS_AWS_NOTE =
  'As AWS runs it (--as-aws): no admission handed leases to, or woke, a long poll of its own process; ' +
  'workers waited on the wake channel (receives without a wait, woken over the WebSocket by the ' +
  'admission of any instance, as a Worker given the ChannelUrl is), dispatch polled each shard once a second.';

const STREAM_NOTES: Record<StreamMode, string> = {
  busy:
    "On busy-time fan-out (the default, `when_busy`): each run's stream was switched on before the run, as the " +
    'sweep switches a stream this busy within two gauge passes, and off after it; dispatch was pushed its ' +
    `records beside its polled mapping (locally, read every ${FAN_OUT_POLL_MS} ms outside the shard's five ` +
    'reads a second; AWS pushes in ~70 ms).',
  always:
    "On enhanced fan-out (--fan-out): dispatch's mappings were pushed their records (locally, read every " +
    `${FAN_OUT_POLL_MS} ms outside the shard's five reads a second; AWS pushes in ~70 ms), and produce's passes took four of a shard's reads.`,
  polled: "Polled (--polled): dispatch's mappings read each shard, one of its five reads a second.",
};

/** What `leaseq size` (cli/sizing.ts) takes a delivered message to cost: rewritten by each run of c4-ids. */
const FIGURES_FILE = fileURLToPath(new URL('./figures.json', import.meta.url));

/**
 * Rewrites bench/figures.json from the producer-ids run (as leaseq/client sends), when it ran and
 * kept its promises: two decimals, as docs/performance.md quotes them, and a fixed key order, so a
 * rerun changes only the figures. Answers the file written, or undefined.
 */
function writeSizingFigures(report: Report): string | undefined {
  const run = report.endToEnd.find((r) => r.queue === RUN.producerIds);
  const cost = report.cost.runs.find((r) => r.run === RUN.producerIds);
  if (!run || !cost || run.failed) return undefined;
  const round = (n: number) => Math.round(n * 100) / 100;
  const figures: BenchFigures = {
    run: run.queue,
    description: run.description,
    date: report.date.slice(0, 10),
    dynamodb: report.dynamodb,
    payloadBytes: report.workload.payloadBytes,
    writeUnitsPerMessage: round(cost.perMessage.writeUnitsAllIn),
    readUnitsPerMessage: round(cost.perMessage.readUnits),
    dynamodbRequestsPerMessage: round(cost.perMessage.dynamodbRequests),
    apiRequestsPerMessage: round(cost.perMessage.apiRequests),
  };
  writeFileSync(FIGURES_FILE, `${JSON.stringify(figures, null, 2)}\n`);
  return relative(process.cwd(), FIGURES_FILE);
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      messages: { type: 'string', default: '2000' },
      backlog: { type: 'string', default: String(GOAL_BACKLOG) },
      'skip-peer': { type: 'boolean', default: false },
      'dynamodb-local': { type: 'boolean', default: false },
      baseline: { type: 'string' },
      only: { type: 'string' },
      'as-aws': { type: 'boolean', default: false },
      'fan-out': { type: 'boolean', default: false },
      polled: { type: 'boolean', default: false },
      'reshard-rate': { type: 'string', default: String(RESHARD_RATE) },
    },
  });
  const integer = (name: string, raw: string, min: number) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}, got ${raw}`);
    return n;
  };
  const backlog = integer('backlog', values.backlog, 0);
  if (backlog !== 0 && backlog <= SMALL_BACKLOG) {
    throw new Error(`--backlog must be 0 (skip) or above ${SMALL_BACKLOG}, got ${backlog}`);
  }
  return {
    messages: integer('messages', values.messages, 1),
    backlog,
    peer: !values['skip-peer'],
    dynamodb: values['dynamodb-local']
      ? 'dynamodb-local'
      : parseDynamoDbEmulator(process.env[DYNAMODB_EMULATOR_ENV]),
    baseline: values.baseline === undefined ? undefined : readBaseline(values.baseline),
    only: values.only === undefined ? undefined : parseOnly(values.only),
    asAws: values['as-aws'],
    streams: streamMode(values['fan-out'], values.polled),
    reshardRate: integer('reshard-rate', values['reshard-rate'], 1),
  };
}

function streamMode(fanOut: boolean, polled: boolean): StreamMode {
  if (fanOut && polled) throw new Error('--fan-out and --polled are two ways a stream reads: give one');
  return fanOut ? 'always' : polled ? 'polled' : 'busy';
}

/** --only's run names, each one the bench has. */
function parseOnly(raw: string): ReadonlySet<string> {
  const known = [...PRODUCE_RUNS, ...END_TO_END_RUNS]
    .map((r) => r.queue)
    .concat(SCALING_QUEUE, ISOLATION, RESHARD);
  const names = raw
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !known.includes(n));
  if (!names.length || unknown.length) {
    throw new Error(`--only takes run names among ${known.join(', ')}, got ${raw}`);
  }
  return new Set(names);
}

/** The goal rows of an earlier run of this bench. */
function readBaseline(file: string): { file: string; goals: GoalRow[] } {
  const report = JSON.parse(readFileSync(file, 'utf8')) as Partial<Report>;
  if (!Array.isArray(report.goals)) {
    throw new Error(`--baseline ${file}: no goals in it (written by an older bench, before the goals table)`);
  }
  return { file, goals: report.goals };
}

type Measured = Pick<
  Report,
  'backgroundRequestsPerSecond' | 'background' | 'idleTick' | 'produce' | 'endToEnd' | 'scaling'
>;

async function measure(
  runtime: Runtime,
  messages: number,
  only: ReadonlySet<string> | undefined,
  asAws: boolean,
): Promise<Measured> {
  const chosen = <T extends { queue: string }>(runs: readonly T[]) =>
    runs.filter((r) => !only || only.has(r.queue));
  /** A run on its queue's stream, busy-time fan-out switched on for it (runtime.ts onBusyStream). */
  const onStream = <T>(queue: string, fn: () => Promise<T>) =>
    onBusyStream(runtime, runtime.config.tenant.queues[queue]?.stream as string, fn);
  // As AWS runs it, workers wait on the wake channel, as a Worker given the stack's ChannelUrl does.
  const admin: Endpoint = {
    url: runtime.url,
    key: runtime.adminKey,
    ...(asAws ? { channelUrl: runtime.channelUrl } : {}),
  };
  const { meter } = runtime.clients;
  const probe = new CostProbe();
  for (const client of [runtime.clients.doc, runtime.clients.kinesis, await runtime.clients.s3.client()])
    probe.attach(client);

  // The sweep's first pass also computes every queue's gauges (once a minute after that): not the idle rate.
  await sleep(FIRST_SWEEP_MS);
  meter.reset();
  await sleep(BACKGROUND_SECONDS * 1000);
  const background = meter.snapshot();
  const idleTick = await measureIdleTick(runtime);

  const produceResults: RunResult[] = [];
  for (const run of chosen(PRODUCE_RUNS)) {
    progress(`${run.queue}: producing ${messages} messages in batches of ${run.batchSize}`);
    const api: Endpoint = { ...admin, tally: new ApiTally() };
    meter.reset();
    probe.reset();
    const startedAt = performance.now();
    const { producedAt, admittedAt } = await onStream(run.queue, async () => {
      await produce(api, run.queue, {
        messages,
        batchSize: run.batchSize,
        inFlight: run.inFlight,
        ids: 'server',
      });
      const producedAt = performance.now();
      // Admission is part of what producing a message costs; waiting for it also keeps it out of the next run.
      await runtime.eventSource.drained(60_000);
      return { producedAt, admittedAt: performance.now() };
    });
    const snapshot = meter.snapshot();
    produceResults.push({
      queue: run.queue,
      description: `produce, batch ${run.batchSize}, ${run.inFlight} in flight, server ids`,
      messages,
      seconds: (producedAt - startedAt) / 1000,
      messagesPerSecond: messages / ((producedAt - startedAt) / 1000),
      admittedAfterSeconds: (admittedAt - startedAt) / 1000,
      meter: snapshot,
      probe: probe.snapshot(),
      api: (api.tally as ApiTally).snapshot(),
      perMessage: perMessage(snapshot, messages),
    });
  }

  const endToEndResults: RunResult[] = [];
  if (chosen(END_TO_END_RUNS).length) {
    progress(`${WARM_UP.queue}: ${WARM_UP.messages} messages, not measured`);
    await onStream(WARM_UP.queue, () =>
      endToEnd(admin, WARM_UP.queue, {
        ...WARM_UP,
        timeoutMs: END_TO_END_TIMEOUT_MS,
        onAllAcked: () => {},
      }),
    );
  }
  for (const run of chosen(END_TO_END_RUNS)) {
    // A paced run's length is its own: at 10 a second, --messages would make it minutes long.
    const runMessages = run.paced ? Math.min(run.paced.messages, messages) : messages;
    progress(`${run.queue}: ${runMessages} messages through ${describeRun(run)}`);
    const api: Endpoint = { ...admin, tally: new ApiTally() };
    meter.reset();
    probe.reset();
    type Snapshot = { meter: MeterSnapshot; probe: ProbeSnapshot; api: ApiTallySnapshot };
    let snapshot: Snapshot | undefined;
    const result = await onStream(run.queue, () =>
      endToEnd(api, run.queue, {
        messages: runMessages,
        workers: run.workers,
        ids: run.ids,
        nackFirstAttempt: run.nackFirstAttempt,
        ...(run.paced ? { paced: run.paced } : {}),
        ...(run.ordered ? { ordered: run.ordered } : {}),
        timeoutMs: END_TO_END_TIMEOUT_MS,
        onAllAcked: () => {
          snapshot = {
            meter: meter.snapshot(),
            probe: probe.snapshot(),
            api: (api.tally as ApiTally).snapshot(),
          };
        },
      }),
    );
    const seconds = (result.finishedAt - result.startedAt) / 1000;
    // endToEnd returns only after onAllAcked ran.
    const measured = snapshot as Snapshot;
    const { orderViolations } = result;
    const failed = orderViolations ? `${orderViolations} per-key order violations` : undefined;
    if (failed) progress(`${run.queue} FAILED: ${failed}`);
    endToEndResults.push({
      queue: run.queue,
      description: describeRun(run),
      messages: runMessages,
      workers: run.workers,
      seconds,
      messagesPerSecond: runMessages / seconds,
      latencyMs: { p50: percentile(result.latenciesMs, 50), p99: percentile(result.latenciesMs, 99) },
      ...(result.retryLatenciesMs.length
        ? {
            retryLatencyMs: {
              p50: percentile(result.retryLatenciesMs, 50),
              p99: percentile(result.retryLatenciesMs, 99),
            },
          }
        : {}),
      redelivered: result.redelivered,
      ...(orderViolations !== undefined ? { orderViolations } : {}),
      ...(failed ? { failed } : {}),
      meter: measured.meter,
      probe: measured.probe,
      api: measured.api,
      perMessage: perMessage(measured.meter, runMessages),
    });
  }

  return {
    backgroundRequestsPerSecond: Object.fromEntries(
      Object.entries(background.requests).map(([op, n]) => [op, n / BACKGROUND_SECONDS]),
    ),
    background: {
      seconds: BACKGROUND_SECONDS,
      queues: Object.keys(runtime.config.tenant.queues).length,
      meter: background,
    },
    idleTick,
    produce: produceResults,
    endToEnd: endToEndResults,
    ...(!only || only.has(SCALING_QUEUE)
      ? { scaling: await phase('scaling', () => runScaling(admin, SCALING_SECONDS_PER_STEP, progress)) }
      : {}),
  };
}

function costOf(
  measured: Measured,
  dynamodb: DynamoDbEmulator,
  deployed: Record<FixedTenant, DeployedTenant>,
): Report['cost'] {
  const { background } = measured;
  const runs = measured.endToEnd.map((r) =>
    runCost(
      {
        run: r.queue,
        messages: r.messages,
        seconds: r.seconds,
        shards: SHARDS,
        meter: r.meter,
        probe: r.probe,
        api: r.api,
        indexReported: reportsIndexUnits(dynamodb),
      },
      background,
    ),
  );
  return {
    region: REGION,
    pricesAsOf: PRICES_AS_OF,
    prices: PRICES,
    runs,
    sqs: sqsCosts(WORKLOAD.payloadBytes),
    fixedMonthly: fixedMonthly(deployed, measured.idleTick),
  };
}

function capacityNote(dynamodb: DynamoDbEmulator): string {
  return reportsIndexUnits(dynamodb)
    ? 'DynamoDB units are as DynamoDB Local reports them, base table and indexes (ReturnConsumedCapacity INDEXES).'
    : `DynamoDB units are base-table units as dynalite reports them; index WRU ${INDEX_NOT_REPORTED}.`;
}

async function phase<T>(name: string, run: () => Promise<T>): Promise<T | PhaseFailure> {
  try {
    return await run();
  } catch (err) {
    progress(`${name} failed: ${String(err)}`);
    return { failed: err instanceof Error ? err.message : String(err) };
  }
}

function failedRuns(measured: Pick<Measured, 'endToEnd'>): { queue: string; failed: string }[] {
  return measured.endToEnd.flatMap((r) => (r.failed ? [{ queue: r.queue, failed: r.failed }] : []));
}

function progress(line: string): void {
  process.stderr.write(`… ${line}\n`);
}

function print(report: Report, file: string, baseline: readonly GoalRow[] | undefined): void {
  const runs = [...report.produce, ...report.endToEnd];
  const { machine } = report;
  console.log(
    `\nleaseq bench — ${report.date}, ${report.messages} messages per run, ` +
      `${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}, DynamoDB: ${report.dynamodb}`,
  );
  const w = report.workload;
  console.log(
    `Workload: ${w.payloadBytes}-byte payloads; end-to-end runs produce batches of ${w.produceBatch} ` +
      `(${w.produceInFlight} in flight), receive ${w.receiveMax} (long poll ${w.receiveWaitSeconds} s), ack ` +
      `${w.ackBatch} receipts a request; a nack run retries after ${w.nackRetryAfterSeconds} s.\n`,
  );
  console.log(
    formatTable(
      [
        'run',
        'msg/s',
        'p50 ms',
        'p99 ms',
        'req/msg',
        'req/msg w/o GetRecords',
        'base WRU/msg',
        'RRU/msg',
        'order violations',
      ],
      runs.map((r) => [
        `${r.queue}: ${r.description}`,
        r.messagesPerSecond,
        r.latencyMs ? r.latencyMs.p50 : '-',
        r.latencyMs ? r.latencyMs.p99 : '-',
        r.perMessage.totalRequests,
        r.perMessage.requestsWithoutPolling,
        r.perMessage.writeUnits,
        r.perMessage.readUnits,
        r.orderViolations === undefined ? '-' : String(r.orderViolations),
      ]),
    ),
  );
  for (const r of failedRuns(report)) console.log(`\nRUN FAILED: ${r.queue}: ${r.failed}.`);
  console.log('\nAWS requests per message, by operation:\n');
  console.log(
    formatTable(['operation', ...runs.map((r) => r.queue)], operationRows(runs.map((r) => r.perMessage))),
  );
  const background = Object.entries(report.backgroundRequestsPerSecond)
    .map(([op, n]) => `${op} ${n.toFixed(0)}/s`)
    .join(', ');
  console.log(`\nWith no traffic the runtime still makes: ${background || 'no requests'}.`);
  const redelivered = report.endToEnd.reduce((n, r) => n + (r.redelivered ?? 0), 0);
  console.log(`Redeliveries in the end-to-end runs: ${redelivered}.`);
  if (report.scaling && 'failed' in report.scaling)
    console.log(`\nScaling phase: failed: ${report.scaling.failed}`);
  else if (report.scaling) printScaling(report.scaling);
  for (const note of report.notes) console.log(note);

  const { cost } = report;
  printCost(cost.runs, cost.sqs, cost.fixedMonthly, RUN.headline);
  console.log(
    `\nPrices: ${cost.region} list prices as of ${cost.pricesAsOf} (bench/prices.ts has each source).`,
  );
  for (const note of COST_NOTES) console.log(note);
  if (!report.backlog) console.log('\nBacklog phase: skipped (--backlog 0).');
  else if ('failed' in report.backlog) console.log(`\nBacklog phase: failed: ${report.backlog.failed}`);
  else printBacklog(report.backlog);
  if (report.isolation && 'failed' in report.isolation)
    console.log(`\nIsolation phase: failed: ${report.isolation.failed}`);
  else if (report.isolation) printIsolation(report.isolation);
  if (report.resharding && 'failed' in report.resharding)
    console.log(`\nResharding phase: failed: ${report.resharding.failed}`);
  else if (report.resharding) printResharding(report.resharding);
  if (report.peer && 'failed' in report.peer) console.log(`\nBullMQ peer: failed: ${report.peer.failed}`);
  else if (report.peer) {
    printPeer(
      report.peer,
      plainRuns(report.endToEnd).map((r) => ({
        workers: r.workers ?? 0,
        messagesPerSecond: r.messagesPerSecond,
        ...(r.latencyMs ? { latencyMs: r.latencyMs } : {}),
      })),
    );
  } else console.log('\nBullMQ peer: skipped (--skip-peer).');
  printGoals(report.goals, baseline);
  if (report.baseline) console.log(`Baseline: ${report.baseline}.`);
  console.log(`\nJSON: ${file}`);
}

async function main(): Promise<void> {
  const options = parseOptions();
  // EMF documents on stdout would drown the tables (infra/local/main.ts does the same).
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  const startedAt = new Date();
  const dataDir = mkdtempSync(join(tmpdir(), 'leaseq-bench-'));
  let runtime: Runtime | undefined;
  let measured: Measured;
  try {
    runtime = await startBenchRuntime(
      parseTenantConfig(tenantFile(options.streams), 'bench tenant'),
      dataDir,
      ADMIN_KEY,
      options.dynamodb,
      { asAws: options.asAws },
    );
    measured = await measure(runtime, options.messages, options.only, options.asAws);
  } finally {
    await runtime?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  // Each later phase has the machine to itself: leaseq's runtime is closed.
  const backlog =
    options.backlog > 0
      ? await phase('backlog phase', () =>
          runBacklogIsolated({
            ...BACKLOG_DEFAULTS,
            sizes: [SMALL_BACKLOG, options.backlog],
            dynamodb: options.dynamodb,
          }),
        )
      : undefined;
  const isolation =
    !options.only || options.only.has(ISOLATION)
      ? await phase('isolation', () => runIsolation(options.dynamodb, progress, options))
      : undefined;
  const resharding =
    !options.only || options.only.has(RESHARD)
      ? await phase('reshard', () => runResharding(options.dynamodb, options.reshardRate, progress))
      : undefined;
  const peer = options.peer
    ? await phase('BullMQ peer', () =>
        runPeer({
          messages: options.messages,
          workerCounts: plainRuns(END_TO_END_RUNS).map((r) => r.workers),
          timeoutMs: END_TO_END_TIMEOUT_MS,
          progress,
        }),
      )
    : undefined;
  const cost = costOf(measured, options.dynamodb, await deployedTenants());
  const report: Report = {
    date: startedAt.toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
    },
    dynamodb: options.dynamodb,
    workload: WORKLOAD,
    messages: options.messages,
    ...measured,
    cost,
    ...(backlog ? { backlog } : {}),
    ...(isolation ? { isolation } : {}),
    ...(resharding ? { resharding } : {}),
    ...(peer ? { peer } : {}),
    goals: goalRows({
      costs: cost.runs,
      throughput: measured.endToEnd,
      latency: measured.endToEnd,
      failedRuns: failedRuns(measured),
      scaling: measured.scaling,
      sqs: cost.sqs,
      fixed: cost.fixedMonthly,
      backlog,
      isolation,
      resharding,
      peer,
      baseline: options.baseline?.goals,
      asAws: options.asAws,
      streams: options.streams,
    }),
    ...(options.baseline ? { baseline: options.baseline.file } : {}),
    notes: [
      SCOPE_NOTE,
      capacityNote(options.dynamodb),
      ...(options.asAws ? [AS_AWS_NOTE] : []),
      STREAM_NOTES[options.streams],
    ],
  };
  const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${report.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  // --as-aws measures the same messages with a receiver's re-reads: the in-process run's figures are the ones quoted.
  const figures = options.asAws ? undefined : writeSizingFigures(report);
  print(report, relative(process.cwd(), file), options.baseline?.goals);
  if (figures) progress(`leaseq size's per-message figures: ${figures}`);
  progress(`done in ${((Date.now() - startedAt.getTime()) / 1000).toFixed(0)} s`);
  // Figures of a run that broke its queue's promises are printed, but the bench did not pass.
  if (failedRuns(measured).length) process.exitCode = 1;
  if (resharding && !('failed' in resharding) && reshardBroken(resharding).length) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
