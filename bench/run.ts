import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { MeterSnapshot } from '../functions/aws/meter.js';
import { parseTenantConfig } from '../functions/core/config.js';
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
import { INDEX_WRITES_PER_DELIVERED_MESSAGE, PRICES, PRICES_AS_OF, REGION } from './prices.js';
import { CostProbe, type ProbeSnapshot } from './probe.js';
import { startBenchRuntime } from './runtime.js';
import { formatTable, operationRows, type PerMessage, percentile, perMessage } from './stats.js';
import {
  ApiTally,
  type ApiTallySnapshot,
  type Endpoint,
  endToEnd,
  PAYLOAD_BYTES,
  produce,
} from './workload.js';

/**
 * `npm run bench [-- --messages N] [--backlog N] [--skip-peer]`: throughput, latency and AWS cost
 * per message of the local runtime, measured over its HTTP API, turned into dollars beside SQS;
 * receive+ack and memory behind a small and a large backlog; and BullMQ on a local Redis for the
 * same workload. Prints tables and writes bench/results/<time>.json.
 *
 * --messages N   messages per produce and end-to-end run, and per BullMQ run (default 2000)
 * --backlog N    the large backlog of the backlog phase, beside 1,000 (default 50000; 0 skips the phase)
 * --skip-peer    no BullMQ phase
 */

const PRODUCE_RUNS = [
  { queue: 'p1', batchSize: 1, inFlight: 8 },
  { queue: 'p100', batchSize: 100, inFlight: 2 },
  { queue: 'p500', batchSize: 500, inFlight: 2 },
] as const;
const END_TO_END_RUNS = [
  { queue: 'c1', workers: 1 },
  { queue: 'c4', workers: 4 },
  { queue: 'c16', workers: 16 },
] as const;
/** A queue per run, so no run starts with another's messages or counters. */
const SHARDS = 2;
const TENANT = {
  tenant: 'bench',
  queues: Object.fromEntries([...PRODUCE_RUNS, ...END_TO_END_RUNS].map((r) => [r.queue, { shards: SHARDS }])),
};
/** The end-to-end run whose cost is set beside SQS's. */
const HEADLINE_RUN = 'c4';
const SMALL_BACKLOG = 1000;
/**
 * 100,000 took 336 s to produce here (~300 msg/s at batch 500: each message is a conditional
 * DynamoDB put for its dedup record), over the ~4 minutes the phase may take in an ~8-minute
 * run; `--backlog 100000` measures it.
 */
const DEFAULT_BACKLOG = 50_000;
const ADMIN_KEY = 'bench-admin-key-0123456789';
const END_TO_END_TIMEOUT_MS = 5 * 60_000;
/** Long enough for a few sweep passes (one a second), so the background rate is not one pass's luck. */
const BACKGROUND_SECONDS = 3;
const FIRST_SWEEP_MS = 1500;

interface RunResult {
  queue: string;
  description: string;
  messages: number;
  seconds: number;
  messagesPerSecond: number;
  /** Produce runs: until dispatch had admitted every message into the lease window. */
  admittedAfterSeconds?: number;
  latencyMs?: { p50: number; p99: number };
  redelivered?: number;
  meter: MeterSnapshot;
  probe: ProbeSnapshot;
  api: ApiTallySnapshot;
  perMessage: PerMessage;
}

interface Report {
  date: string;
  machine: { cpus: number; cpuModel: string; node: string; platform: string };
  messages: number;
  /** What the runtime asks of AWS with no traffic at all: the sweep and the shard pollers. */
  backgroundRequestsPerSecond: Record<string, number>;
  background: Background;
  produce: RunResult[];
  endToEnd: RunResult[];
  cost: {
    region: string;
    pricesAsOf: string;
    prices: typeof PRICES;
    indexWritesPerDeliveredMessage: number;
    runs: RunCost[];
    sqs: SqsCost[];
    fixedMonthlyPerQueue: FixedMonthly[];
  };
  backlog?: BacklogReport;
  peer?: PeerReport;
  notes: string[];
}

interface Options {
  messages: number;
  backlog: number;
  peer: boolean;
}

const CAPACITY_NOTE =
  'DynamoDB WCU/RCU are base-table capacity as dynalite reports it: on AWS every write that changes gsi1 keys ' +
  '(admission, lease and ack each do) also costs index write units, so the write figure is a lower bound.';
const SCOPE_NOTE =
  'Per-message figures include everything the runtime did during the run: dispatch admitting messages, ' +
  'the sweep (one pass a second over every queue) and the local shard pollers (Kinesis.GetRecords).';

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      messages: { type: 'string', default: '2000' },
      backlog: { type: 'string', default: String(DEFAULT_BACKLOG) },
      'skip-peer': { type: 'boolean', default: false },
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
  return { messages: integer('messages', values.messages, 1), backlog, peer: !values['skip-peer'] };
}

type Measured = Pick<Report, 'backgroundRequestsPerSecond' | 'background' | 'produce' | 'endToEnd'>;

async function measure(runtime: Runtime, messages: number): Promise<Measured> {
  const admin: Endpoint = { url: runtime.url, key: runtime.adminKey };
  const { meter } = runtime.clients;
  const probe = new CostProbe();
  for (const client of [runtime.clients.dynamodb, runtime.clients.kinesis, runtime.clients.s3])
    probe.attach(client);

  // The sweep's first pass also computes every queue's gauges (once a minute after that): not the idle rate.
  await sleep(FIRST_SWEEP_MS);
  meter.reset();
  await sleep(BACKGROUND_SECONDS * 1000);
  const background = meter.snapshot();

  const produceResults: RunResult[] = [];
  for (const run of PRODUCE_RUNS) {
    progress(`${run.queue}: producing ${messages} messages in batches of ${run.batchSize}`);
    const api: Endpoint = { ...admin, tally: new ApiTally() };
    meter.reset();
    probe.reset();
    const startedAt = performance.now();
    await produce(api, run.queue, { messages, batchSize: run.batchSize, inFlight: run.inFlight });
    const producedAt = performance.now();
    // Admission is part of what producing a message costs; waiting for it also keeps it out of the next run.
    await runtime.eventSource.drained(60_000);
    const admittedAt = performance.now();
    const snapshot = meter.snapshot();
    produceResults.push({
      queue: run.queue,
      description: `produce, batch ${run.batchSize}, ${run.inFlight} in flight`,
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
  for (const run of END_TO_END_RUNS) {
    progress(`${run.queue}: ${messages} messages through ${run.workers} worker(s)`);
    const api: Endpoint = { ...admin, tally: new ApiTally() };
    meter.reset();
    probe.reset();
    type Snapshot = { meter: MeterSnapshot; probe: ProbeSnapshot; api: ApiTallySnapshot };
    let snapshot: Snapshot | undefined;
    const result = await endToEnd(api, run.queue, {
      messages,
      workers: run.workers,
      timeoutMs: END_TO_END_TIMEOUT_MS,
      onAllAcked: () => {
        snapshot = {
          meter: meter.snapshot(),
          probe: probe.snapshot(),
          api: (api.tally as ApiTally).snapshot(),
        };
      },
    });
    const seconds = (result.finishedAt - result.startedAt) / 1000;
    // endToEnd returns only after onAllAcked ran.
    const measured = snapshot as Snapshot;
    endToEndResults.push({
      queue: run.queue,
      description: `produce (batch 100) + ${run.workers} worker(s) receive 10 / ack`,
      messages,
      seconds,
      messagesPerSecond: messages / seconds,
      latencyMs: { p50: percentile(result.latenciesMs, 50), p99: percentile(result.latenciesMs, 99) },
      redelivered: result.redelivered,
      meter: measured.meter,
      probe: measured.probe,
      api: measured.api,
      perMessage: perMessage(measured.meter, messages),
    });
  }

  return {
    backgroundRequestsPerSecond: Object.fromEntries(
      Object.entries(background.requests).map(([op, n]) => [op, n / BACKGROUND_SECONDS]),
    ),
    background: { seconds: BACKGROUND_SECONDS, queues: Object.keys(TENANT.queues).length, meter: background },
    produce: produceResults,
    endToEnd: endToEndResults,
  };
}

function costOf(measured: Measured): Report['cost'] {
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
      },
      background,
    ),
  );
  const queue = parseTenantConfig(TENANT, 'bench tenant').queues[HEADLINE_RUN];
  return {
    region: REGION,
    pricesAsOf: PRICES_AS_OF,
    prices: PRICES,
    indexWritesPerDeliveredMessage: INDEX_WRITES_PER_DELIVERED_MESSAGE,
    runs,
    sqs: sqsCosts(PAYLOAD_BYTES),
    fixedMonthlyPerQueue: fixedMonthly(SHARDS, queue?.retention_hours ?? 96, background),
  };
}

function progress(line: string): void {
  process.stderr.write(`… ${line}\n`);
}

function print(report: Report, file: string): void {
  const runs = [...report.produce, ...report.endToEnd];
  const { machine } = report;
  console.log(
    `\nleaseq bench — ${report.date}, ${report.messages} messages per run, ` +
      `${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}\n`,
  );
  console.log(
    formatTable(
      ['run', 'msg/s', 'p50 ms', 'p99 ms', 'req/msg', 'req/msg w/o GetRecords', 'WCU/msg', 'RCU/msg'],
      runs.map((r) => [
        `${r.queue}: ${r.description}`,
        r.messagesPerSecond,
        r.latencyMs ? r.latencyMs.p50 : '-',
        r.latencyMs ? r.latencyMs.p99 : '-',
        r.perMessage.totalRequests,
        r.perMessage.requestsWithoutPolling,
        r.perMessage.writeUnits,
        r.perMessage.readUnits,
      ]),
    ),
  );
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
  for (const note of report.notes) console.log(note);

  const { cost } = report;
  printCost(cost.runs, cost.sqs, cost.fixedMonthlyPerQueue, HEADLINE_RUN);
  console.log(
    `\nPrices: ${cost.region} list prices as of ${cost.pricesAsOf} (bench/prices.ts has each source).`,
  );
  for (const note of COST_NOTES) console.log(note);
  if (report.backlog) printBacklog(report.backlog);
  else console.log('\nBacklog phase: skipped (--backlog 0).');
  if (report.peer) {
    printPeer(
      report.peer,
      report.endToEnd.map((r) => ({
        workers: Number(r.queue.slice(1)),
        messagesPerSecond: r.messagesPerSecond,
        ...(r.latencyMs ? { latencyMs: r.latencyMs } : {}),
      })),
    );
  } else console.log('\nBullMQ peer: skipped (--skip-peer).');
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
    runtime = await startBenchRuntime(parseTenantConfig(TENANT, 'bench tenant'), dataDir, ADMIN_KEY);
    measured = await measure(runtime, options.messages);
  } finally {
    await runtime?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  // Each later phase has the machine to itself: leaseq's runtime is closed.
  const backlog =
    options.backlog > 0
      ? await runBacklogIsolated({ ...BACKLOG_DEFAULTS, sizes: [SMALL_BACKLOG, options.backlog] })
      : undefined;
  const peer = options.peer
    ? await runPeer({
        messages: options.messages,
        workerCounts: END_TO_END_RUNS.map((r) => r.workers),
        concurrency: 10,
        timeoutMs: END_TO_END_TIMEOUT_MS,
        progress,
      })
    : undefined;
  const report: Report = {
    date: startedAt.toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
    },
    messages: options.messages,
    ...measured,
    cost: costOf(measured),
    ...(backlog ? { backlog } : {}),
    ...(peer ? { peer } : {}),
    notes: [SCOPE_NOTE, CAPACITY_NOTE],
  };
  const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${report.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  print(report, relative(process.cwd(), file));
  progress(`done in ${((Date.now() - startedAt.getTime()) / 1000).toFixed(0)} s`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
