import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { MeterSnapshot } from '../functions/aws/meter.js';
import { parseTenantConfig } from '../functions/core/config.js';
import { type Runtime, startRuntime } from '../infra/local/runtime.js';
import { formatTable, operationRows, type PerMessage, percentile, perMessage } from './stats.js';
import { type Endpoint, endToEnd, produce } from './workload.js';

/**
 * `npm run bench [-- --messages N]`: throughput, latency and AWS cost per message of the
 * local runtime, measured over its HTTP API. Prints tables and writes bench/results/<time>.json.
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
const TENANT = {
  tenant: 'bench',
  queues: Object.fromEntries([...PRODUCE_RUNS, ...END_TO_END_RUNS].map((r) => [r.queue, { shards: 2 }])),
};
const ADMIN_KEY = 'bench-admin-key-0123456789';
const END_TO_END_TIMEOUT_MS = 5 * 60_000;
/** Long enough for a few sweep passes (one a second), so the background rate is not one pass's luck. */
const BACKGROUND_SECONDS = 3;

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
  perMessage: PerMessage;
}

interface Report {
  date: string;
  machine: { cpus: number; cpuModel: string; node: string; platform: string };
  messages: number;
  /** What the runtime asks of AWS with no traffic at all: the sweep and the shard pollers. */
  backgroundRequestsPerSecond: Record<string, number>;
  produce: RunResult[];
  endToEnd: RunResult[];
  notes: string[];
}

const CAPACITY_NOTE =
  'DynamoDB WCU/RCU are base-table capacity as dynalite reports it: on AWS every write that changes gsi1 keys ' +
  '(admission, lease and ack each do) also costs index write units, so the write figure is a lower bound.';
const SCOPE_NOTE =
  'Per-message figures include everything the runtime did during the run: dispatch admitting messages, ' +
  'the sweep (one pass a second over every queue) and the local shard pollers (Kinesis.GetRecords).';

function parseMessages(): number {
  const { values } = parseArgs({ options: { messages: { type: 'string', default: '2000' } } });
  const messages = Number(values.messages);
  if (!Number.isInteger(messages) || messages < 1) {
    throw new Error(`--messages must be a positive integer, got ${values.messages}`);
  }
  return messages;
}

async function measure(runtime: Runtime, messages: number): Promise<Report> {
  const api: Endpoint = { url: runtime.url, key: runtime.adminKey };
  const { meter } = runtime.clients;

  meter.reset();
  await sleep(BACKGROUND_SECONDS * 1000);
  const background = meter.snapshot();

  const produceResults: RunResult[] = [];
  for (const run of PRODUCE_RUNS) {
    progress(`${run.queue}: producing ${messages} messages in batches of ${run.batchSize}`);
    meter.reset();
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
      perMessage: perMessage(snapshot, messages),
    });
  }

  const endToEndResults: RunResult[] = [];
  for (const run of END_TO_END_RUNS) {
    progress(`${run.queue}: ${messages} messages through ${run.workers} worker(s)`);
    meter.reset();
    let snapshot: MeterSnapshot | undefined;
    const result = await endToEnd(api, run.queue, {
      messages,
      workers: run.workers,
      timeoutMs: END_TO_END_TIMEOUT_MS,
      onAllAcked: () => {
        snapshot = meter.snapshot();
      },
    });
    const seconds = (result.finishedAt - result.startedAt) / 1000;
    // endToEnd returns only after onAllAcked ran.
    const measured = snapshot as MeterSnapshot;
    endToEndResults.push({
      queue: run.queue,
      description: `produce (batch 100) + ${run.workers} worker(s) receive 10 / ack`,
      messages,
      seconds,
      messagesPerSecond: messages / seconds,
      latencyMs: { p50: percentile(result.latenciesMs, 50), p99: percentile(result.latenciesMs, 99) },
      redelivered: result.redelivered,
      meter: measured,
      perMessage: perMessage(measured, messages),
    });
  }

  return {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
    },
    messages,
    backgroundRequestsPerSecond: Object.fromEntries(
      Object.entries(background.requests).map(([op, n]) => [op, n / BACKGROUND_SECONDS]),
    ),
    produce: produceResults,
    endToEnd: endToEndResults,
    notes: [SCOPE_NOTE, CAPACITY_NOTE],
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
  console.log(`\nJSON: ${file}`);
}

async function main(): Promise<void> {
  const messages = parseMessages();
  const dataDir = mkdtempSync(join(tmpdir(), 'leaseq-bench-'));
  let runtime: Runtime | undefined;
  let report: Report;
  try {
    runtime = await startRuntime({
      tenant: parseTenantConfig(TENANT, 'bench tenant'),
      dataDir,
      port: 0,
      adminKey: ADMIN_KEY,
      logLevel: 'SILENT',
      sweepIntervalMs: 1000,
      idlePollMs: 20,
    });
    report = await measure(runtime, messages);
  } finally {
    await runtime?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${report.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  print(report, relative(process.cwd(), file));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
