import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { MeterSnapshot } from '../functions/aws/meter.js';
import { parseTenantConfig } from '../functions/core/config.js';
import type { DynamoDbEmulator } from '../infra/local/emulators.js';
import type { Runtime } from '../infra/local/runtime.js';
import { ApiTally, type ApiTallySnapshot, type Endpoint, getJson } from './http.js';
import { CostProbe, type ProbeSnapshot } from './probe.js';
import { reportsIndexUnits, startBenchRuntime } from './runtime.js';
import {
  type CapacityPerMessage,
  capacityPerMessage,
  formatTable,
  INDEX_NOT_REPORTED,
  percentile,
} from './stats.js';
import { consume, produce, WORKLOAD } from './workload.js';

/**
 * Backlog scaling: the same receive+ack behind a small backlog and a large one. The contract says
 * mutable state is bounded by the lease window, not the backlog; so the cost and latency of a
 * receive+ack, and the runtime's memory, should not grow with what waits in the log.
 *
 * Each size gets a fresh queue with a small window; the messages are produced with nobody
 * consuming, dispatch fills the window and the rest stays in Kinesis; then 500 messages are
 * received and acked while dispatch refills the window behind them. The window is smaller than
 * the small backlog, so both sizes do the same thing (a full window refilled from the log) and
 * differ only in what waits behind it. A warm-up queue goes first, so the first size measured
 * does not pay for the JIT. The phase runs in a process of its own (runBacklogIsolated), so the
 * memory it reports is this runtime's and nothing else's.
 */

export interface BacklogOptions {
  sizes: readonly number[];
  /** Produced and half consumed on a queue of its own before the measured sizes; not reported. */
  warmup: number;
  /** window_size is per shard (dispatch compares each shard's counter with it). */
  windowPerShard: number;
  shards: number;
  consume: number;
  workers: number;
  produceBatch: number;
  produceInFlight: number;
  dynamodb: DynamoDbEmulator;
  progress: (line: string) => void;
}

export const BACKLOG_DEFAULTS = {
  warmup: 1000,
  windowPerShard: 250,
  shards: 2,
  consume: 500,
  workers: 4,
  // A 500-message produce outlasted the client's 30 s timeout on DynamoDB Local on a loaded machine.
  produceBatch: 100,
  produceInFlight: 4,
} as const;

interface Memory {
  rssMb: number;
  heapUsedMb: number;
  externalMb: number;
  /** Since the runtime started: memory can grow with time as well as with the backlog. */
  runtimeSeconds: number;
}

export interface BacklogRun {
  backlog: number;
  queue: string;
  /** Messages the window holds across shards. */
  window: number;
  produceSeconds: number;
  produceMessagesPerSecond: number;
  /** From the end of produce until the window was full. */
  settleSeconds: number;
  /** After a full garbage collection, with the window full and the backlog in the log. */
  memory: Memory;
  consumed: number;
  consumeSeconds: number;
  perMessage: CapacityPerMessage & {
    requests: Record<string, number>;
    totalRequests: number;
    apiRequests: number;
  };
  latencyMs: { receive: { p50: number; p99: number }; ack: { p50: number; p99: number } };
  meter: MeterSnapshot;
  probe: ProbeSnapshot;
  api: ApiTallySnapshot;
}

export interface BacklogReport {
  options: Omit<BacklogOptions, 'progress'>;
  /** After the warm-up, before the measured sizes. */
  memoryAtStart: Memory;
  runs: BacklogRun[];
  /** Largest ÷ smallest backlog, per figure; `unitsPerMessage` is the worse of all-in WRU and RRU. */
  ratios: Record<string, number>;
}

const ADMIN_KEY = 'bench-backlog-admin-key-0123';
const WARMUP_QUEUE = 'backlog-warmup';
const SETTLE_TIMEOUT_MS = 5 * 60_000;
const CONSUME_TIMEOUT_MS = 5 * 60_000;

export async function runBacklog(options: BacklogOptions): Promise<BacklogReport> {
  const queueOf = (size: number) => `backlog-${size}`;
  const queueConfig = { shards: options.shards, window_size: options.windowPerShard };
  const tenant = parseTenantConfig(
    {
      tenant: 'benchbacklog',
      queues: {
        [WARMUP_QUEUE]: queueConfig,
        ...Object.fromEntries(options.sizes.map((size) => [queueOf(size), queueConfig])),
      },
    },
    'backlog bench tenant',
  );
  const dataDir = mkdtempSync(join(tmpdir(), 'leaseq-bench-backlog-'));
  let runtime: Runtime | undefined;
  try {
    runtime = await startBenchRuntime(tenant, dataDir, ADMIN_KEY, options.dynamodb);
    const probe = new CostProbe();
    for (const client of [runtime.clients.doc, runtime.clients.kinesis, await runtime.clients.s3.client()])
      probe.attach(client);
    const started = performance.now();
    const memory = () => memorySince(started);
    await measureSize(runtime, probe, WARMUP_QUEUE, options.warmup, memory, options);
    const memoryAtStart = memory();
    const runs: BacklogRun[] = [];
    for (const size of options.sizes)
      runs.push(await measureSize(runtime, probe, queueOf(size), size, memory, options));
    const { progress: _, ...rest } = options;
    return { options: rest, memoryAtStart, runs, ratios: ratios(runs) };
  } finally {
    await runtime?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function measureSize(
  runtime: Runtime,
  probe: CostProbe,
  queue: string,
  size: number,
  memory: () => Memory,
  options: BacklogOptions,
): Promise<BacklogRun> {
  const admin: Endpoint = { url: runtime.url, key: runtime.adminKey };
  const window = options.windowPerShard * options.shards;
  options.progress(
    `${queue}: producing a backlog of ${size.toLocaleString('en-US')} (batch ${options.produceBatch})`,
  );
  const startedAt = performance.now();
  await produce(admin, queue, {
    messages: size,
    batchSize: options.produceBatch,
    inFlight: options.produceInFlight,
    ids: 'server',
  });
  const producedAt = performance.now();
  const produceSeconds = (producedAt - startedAt) / 1000;
  options.progress(
    `${queue}: produced in ${produceSeconds.toFixed(1)} s (${(size / produceSeconds).toFixed(0)} msg/s); waiting for a full window`,
  );
  // eventSource.drained() would wait forever: a full window keeps a shard's records in the log.
  await windowFull(admin, queue, Math.min(window, size));
  const settleSeconds = (performance.now() - producedAt) / 1000;
  const settledMemory = memory();

  const { meter } = runtime.clients;
  const api: Endpoint = { ...admin, tally: new ApiTally() };
  meter.reset();
  probe.reset();
  type Snapshot = {
    meter: MeterSnapshot;
    probe: ProbeSnapshot;
    api: ApiTallySnapshot;
    acked: number;
    at: number;
  };
  let snapshot: Snapshot | undefined;
  const consumeStarted = performance.now();
  await consume(api, queue, {
    messages: options.consume,
    workers: options.workers,
    timeoutMs: CONSUME_TIMEOUT_MS,
    onAllAcked: (acked) => {
      snapshot = {
        meter: meter.snapshot(),
        probe: probe.snapshot(),
        api: (api.tally as ApiTally).snapshot(),
        acked,
        at: performance.now(),
      };
    },
  });
  // consume() resolves only after onAllAcked ran.
  const s = snapshot as Snapshot;
  const n = s.acked;
  const latencies = (api.tally as ApiTally).latenciesMs;
  const p = (route: string) => ({
    p50: percentile(latencies[route] ?? [0], 50),
    p99: percentile(latencies[route] ?? [0], 99),
  });
  return {
    backlog: size,
    queue,
    window,
    produceSeconds,
    produceMessagesPerSecond: size / produceSeconds,
    settleSeconds,
    memory: settledMemory,
    consumed: n,
    consumeSeconds: (s.at - consumeStarted) / 1000,
    perMessage: {
      ...capacityPerMessage(s.meter, s.probe.failedConditionalWrites, reportsIndexUnits(options.dynamodb), n),
      requests: Object.fromEntries(Object.entries(s.meter.requests).map(([op, c]) => [op, c / n])),
      totalRequests: s.meter.totalRequests / n,
      apiRequests: s.api.total / n,
    },
    latencyMs: { receive: p('receive'), ack: p('ack') },
    meter: s.meter,
    probe: s.probe,
    api: s.api,
  };
}

interface QueueStats {
  depth: number;
  in_flight: number;
}

async function windowFull(api: Endpoint, queue: string, target: number): Promise<void> {
  const deadline = performance.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    const stats = await getJson<QueueStats>(api, `/queues/${queue}/stats`);
    if (stats.depth + stats.in_flight >= target) return;
    if (performance.now() > deadline) {
      throw new Error(
        `${queue}: window holds ${stats.depth + stats.in_flight} of ${target} after the timeout`,
      );
    }
    await sleep(250);
  }
}

let gc: (() => void) | undefined;

/** The process's memory after a full collection, so garbage waiting to be collected is not counted. */
function memorySince(started: number): Memory {
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
  const m = process.memoryUsage();
  return {
    rssMb: m.rss / 2 ** 20,
    heapUsedMb: m.heapUsed / 2 ** 20,
    externalMb: m.external / 2 ** 20,
    runtimeSeconds: (performance.now() - started) / 1000,
  };
}

function ratios(runs: BacklogRun[]): Record<string, number> {
  const small = runs[0];
  const large = runs.at(-1);
  if (!small || !large || small === large) return {};
  const r = (f: (run: BacklogRun) => number) => f(large) / f(small);
  const writeUnitsPerMessage = r((x) => x.perMessage.writeUnitsAllIn);
  const readUnitsPerMessage = r((x) => x.perMessage.readUnits);
  return {
    unitsPerMessage: Math.max(writeUnitsPerMessage, readUnitsPerMessage),
    requestsPerMessage: r((x) => x.perMessage.totalRequests),
    writeUnitsPerMessage,
    readUnitsPerMessage,
    receiveP50: r((x) => x.latencyMs.receive.p50),
    receiveP99: r((x) => x.latencyMs.receive.p99),
    ackP50: r((x) => x.latencyMs.ack.p50),
    ackP99: r((x) => x.latencyMs.ack.p99),
    rss: r((x) => x.memory.rssMb),
    heapUsed: r((x) => x.memory.heapUsedMb),
  };
}

export function printBacklog(report: BacklogReport): void {
  const { runs } = report;
  const small = runs[0];
  const large = runs.at(-1);
  const o = report.options;
  console.log(
    `\nBacklog scaling: receive+ack of ${o.consume} messages (${o.workers} workers, receive ` +
      `${WORKLOAD.receiveMax}, ack ${WORKLOAD.ackBatch}, ${WORKLOAD.payloadBytes}-byte payloads) ` +
      `with window_size ${o.windowPerShard}/shard × ${o.shards} shards = ${o.windowPerShard * o.shards} ` +
      `in the window and the rest in the log:\n`,
  );
  const ratioColumn = small && large && small !== large;
  const row = (label: string, f: (r: BacklogRun) => number, ratio?: number): (string | number)[] => [
    label,
    ...runs.map(f),
    ...(ratioColumn ? [ratio === undefined ? '-' : `${ratio.toFixed(2)}×`] : []),
  ];
  const R = report.ratios;
  console.log(
    formatTable(
      [
        'backlog',
        ...runs.map((r) => r.backlog.toLocaleString('en-US')),
        ...(ratioColumn
          ? [`${large?.backlog.toLocaleString('en-US')} ÷ ${small?.backlog.toLocaleString('en-US')}`]
          : []),
      ],
      [
        row(`produce msg/s (batch ${o.produceBatch}, nobody consuming)`, (r) => r.produceMessagesPerSecond),
        row('window full after produce, s', (r) => r.settleSeconds),
        row(
          'AWS requests / msg (all, incl. refill)',
          (r) => r.perMessage.totalRequests,
          R.requestsPerMessage,
        ),
        row('DynamoDB WRU / msg, base table', (r) => r.perMessage.writeUnits),
        [
          'DynamoDB WRU / msg, indexes',
          ...runs.map((r) => r.perMessage.indexWriteUnits ?? 'not reported'),
          ...(ratioColumn ? ['-'] : []),
        ],
        row('DynamoDB failed conditional writes / msg', (r) => r.perMessage.failedConditionalWrites),
        row(
          'DynamoDB WRU / msg, all-in (base + index + failed)',
          (r) => r.perMessage.writeUnitsAllIn,
          R.writeUnitsPerMessage,
        ),
        row('DynamoDB RRU / msg', (r) => r.perMessage.readUnits, R.readUnitsPerMessage),
        row('API requests / msg', (r) => r.perMessage.apiRequests),
        row('receive p50 ms', (r) => r.latencyMs.receive.p50, R.receiveP50),
        row('receive p99 ms', (r) => r.latencyMs.receive.p99, R.receiveP99),
        row('ack p50 ms', (r) => r.latencyMs.ack.p50, R.ackP50),
        row('ack p99 ms', (r) => r.latencyMs.ack.p99, R.ackP99),
        row('runtime RSS MB (after GC, window full)', (r) => r.memory.rssMb, R.rss),
        row('runtime heap used MB (after GC)', (r) => r.memory.heapUsedMb, R.heapUsed),
        row('  runtime age at that moment, s', (r) => r.memory.runtimeSeconds),
      ],
    ),
  );
  console.log('\nAWS requests per message during receive+ack, by operation:\n');
  const ops = [...new Set(runs.flatMap((r) => Object.keys(r.perMessage.requests)))].sort();
  console.log(
    formatTable(
      ['operation', ...runs.map((r) => r.backlog.toLocaleString('en-US'))],
      ops.map((op) => [op, ...runs.map((r) => r.perMessage.requests[op] ?? 0)]),
    ),
  );
  if (runs.some((r) => r.perMessage.indexWriteUnits === null)) {
    console.log(`\nIndex WRU: ${INDEX_NOT_REPORTED}; the all-in WRU leave them out.`);
  }
  const m = report.memoryAtStart;
  console.log(
    `\nMemory after the warm-up: RSS ${m.rssMb.toFixed(0)} MB, heap ${m.heapUsedMb.toFixed(1)} MB (runtime age ${m.runtimeSeconds.toFixed(0)} s). ` +
      'The process holds only this runtime, its three emulators (data on disk, LevelDB in native memory) ' +
      'and the workload. RSS is a high-water mark (freed native memory is not returned), and dynalite leaves ' +
      'a LevelDB iterator open per Query (the sweep queries every second), so memory also grows with time. ' +
      "Latency ratios move with the load on the machine while each size's 500 messages go through; the request " +
      'and unit ratios are the steady ones.',
  );
}

/**
 * Runs the phase in a child process (the same Node and tsx loader), so its memory figures are
 * not those of whatever ran before in the bench's process, and returns its report.
 */
export async function runBacklogIsolated(options: Omit<BacklogOptions, 'progress'>): Promise<BacklogReport> {
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-bench-backlog-report-'));
  const out = join(dir, 'report.json');
  try {
    const child = spawn(
      process.execPath,
      [...process.execArgv, fileURLToPath(import.meta.url), JSON.stringify(options), out],
      { stdio: 'inherit' },
    );
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (code !== 0) throw new Error(`the backlog phase exited with ${code}`);
    return JSON.parse(readFileSync(out, 'utf8')) as BacklogReport;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// The child's entry: `<this file> <options JSON> <report file>`.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [raw, out] = process.argv.slice(2);
  const report = await runBacklog({
    ...(JSON.parse(raw as string) as Omit<BacklogOptions, 'progress'>),
    progress: (line) => process.stderr.write(`… ${line}\n`),
  });
  writeFileSync(out as string, JSON.stringify(report));
  // The runtime is closed; nothing of this process is needed any more.
  process.exit(0);
}
