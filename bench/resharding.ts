import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { QueryCommand } from '../functions/aws/dynamodb.js';
import { ownStreamName, parseTenantConfig } from '../functions/core/config.js';
import { shardMarksPk } from '../functions/store/keys.js';
import { createAdminClients } from '../infra/local/admin-clients.js';
import type { DynamoDbEmulator } from '../infra/local/emulators.js';
import { type ReshardResult, reshardStream } from '../infra/local/reshard.js';
import type { Runtime } from '../infra/local/runtime.js';
import type { Endpoint } from './http.js';
import { startBenchRuntime } from './runtime.js';
import { formatNumber, formatTable } from './stats.js';
import {
  keyOf,
  keyOrderCheck,
  orderOf,
  type ProduceRequest,
  produce,
  WORKLOAD,
  type WorkerHooks,
  workerLoop,
} from './workload.js';

/**
 * An ordered queue's stream resharded under steady load. The queue has a stream of its own (2
 * shards) and is produced at a steady rate (RESHARD_RATE msg/s unless --reshard-rate says
 * otherwise) over 1,000 keys and a hot key with a fifth of the messages, with WORKERS workers
 * receiving and acking. After a warm-up, acks a second are counted
 * for WINDOW_SECONDS; then the stream is split 2 → 4, WINDOW_SECONDS more; then taken 4 → 3
 * (merges and splits to an even layout), WINDOW_SECONDS more. Per change: the rate before, the
 * lowest second after (beside the lowest before, what the machine's own swings give), and how
 * long after the change the last shard it closed was marked finished, which is what frees the
 * children's keys. At the end the producer stops and the workers drain: every accepted message
 * must be acked, and each key's first deliveries must come in produced order.
 *
 * No unordered queue runs beside it: two queues at RESHARD_RATE are more than 2 cores carry,
 * and neither then keeps up.
 */

export const RESHARD = 'reshard';
const ADMIN_KEY = 'bench-reshard-key-0123456789';
const QUEUE = 'ordered';
/**
 * Messages a second produced, by default: what this 2-core machine's ordered queue carries after
 * a split too. At 200 it keeps up before one (199 acks a second) but not after: an ordered
 * receive looks at every open shard, so twice the shards is twice its reads, and the process
 * was at 1.5 of 2 cores. At 50 a second's acks swing to 0.4× the mean with no change at all.
 */
export const RESHARD_RATE = 100;
const KEYS = { keys: 1000, random: true, hotShare: 0.2 } as const;
const WORKERS = 4;
/** A new process's first seconds (compiling, connecting) are not the rate a change is set beside. */
const WARM_UP_SECONDS = 15;
const WINDOW_SECONDS = 30;
const SHARDS = 2;
const CHANGES = [
  { change: 'split', shards: 4 },
  { change: 'merge', shards: 3 },
] as const;
/** The goal: no second after a change below this share of the mean before it. */
export const RESHARD_DIP_SHARE = 0.5;
/**
 * The drain after the producer stops goes on while acks come: until everything is acked, no ack
 * for DRAIN_STALL_MS, or DRAIN_CAP_MS in all. What is left then is reported, not waited for.
 */
const DRAIN_STALL_MS = 30_000;
const DRAIN_CAP_MS = 60_000;
/** How long after the drain a closed shard may still be unfinished before the figure says so. */
const FINISHED_TIMEOUT_MS = 60_000;

const TENANT = {
  tenant: 'reshard',
  // A hot key at 40 of 200 msg/s needs batches of it: one at a time it falls behind (as c4-ordered-hot).
  queues: { [QUEUE]: { shards: SHARDS, ordered: true, max_per_key: 10 } },
};

export interface ReshardChange {
  change: string;
  from: number;
  to: number;
  /** The phase's second the reshard began in. */
  atSecond: number;
  splits: number;
  merges: number;
  /** The reshard's calls, from the first to the stream's being ACTIVE after the last. */
  reshardMs: number;
  /** Mean acks and accepted messages a second over the WINDOW_SECONDS before and from the change. */
  before: number;
  after: number;
  producedBefore: number;
  producedAfter: number;
  /** The lowest second before the change: how far the machine swings with nothing changing. */
  lowestBefore: number;
  /** The lowest second among the WINDOW_SECONDS from the change's start, and which second. */
  lowest: number;
  lowestAtSecond: number;
  /** lowest ÷ before. */
  ratio: number;
  /** Reshard done → the last shard it closed marked finished; null if not finished in time. */
  releaseMs: number | null;
}

/** A window of the phase: what the process spent on it, and the AWS requests the runtime made. */
export interface ReshardWindow {
  window: string;
  fromSecond: number;
  seconds: number;
  /** CPU seconds of this process (the runtime, its emulators' thread, the bench's clients) a second. */
  cpuPerSecond: number;
  requestsPerSecond: Record<string, number>;
}

export interface ReshardingReport {
  queue: string;
  rate: number;
  workers: number;
  warmUpSeconds: number;
  windowSeconds: number;
  /** The machine's 1-minute load average as the phase began and ended: others' work shares the cores. */
  loadAverage: { start: number; end: number };
  /** Acks, and messages accepted, in each second of the phase from the first produce. */
  ackedPerSecond: number[];
  acceptedPerSecond: number[];
  accepted: number;
  /** Accepted messages not acked when the drain ended (lost, unless the drain ran out of time). */
  unacked: number;
  /** From the producer's stop to the drain's end. */
  drainSeconds: number;
  redelivered: number;
  /** First deliveries that came after a later message of their key's. */
  orderViolations: number;
  changes: ReshardChange[];
  /** Before the first change, and from each change to the next (or the producer's stop). */
  windows: ReshardWindow[];
}

/** A change as carried out: when it began, what it closed, when it was done. */
interface Resharded {
  change: string;
  from: number;
  to: number;
  atSecond: number;
  result: ReshardResult;
  reshardMs: number;
  doneAt: number;
}

export async function runResharding(
  dynamodb: DynamoDbEmulator,
  rate: number,
  progress: (line: string) => void,
): Promise<ReshardingReport> {
  const dataDir = mkdtempSync(join(tmpdir(), 'leaseq-reshard-'));
  const runtime = await startBenchRuntime(
    parseTenantConfig(TENANT, 'reshard tenant'),
    dataDir,
    ADMIN_KEY,
    dynamodb,
  );
  const admin = createAdminClients(runtime.endpoints, runtime.config.region);
  const stream = ownStreamName(TENANT.tenant, QUEUE);
  let flow: Flow | undefined;
  const loadAtStart = loadavg()[0] ?? 0;
  try {
    const seconds = WARM_UP_SECONDS + WINDOW_SECONDS * (CHANGES.length + 1);
    progress(
      `${RESHARD}: ${rate} msg/s to an ordered queue, ${WORKERS} workers, shards ` +
        `${SHARDS} → ${CHANGES.map((c) => c.shards).join(' → ')} every ${WINDOW_SECONDS} s`,
    );
    // A margin past the planned seconds: a producer behind its pace catches up.
    flow = startFlow({ url: runtime.url, key: ADMIN_KEY }, rate, rate * (seconds + 30));
    const windows = windowMeter(runtime, flow.second);
    await sleepUntil(flow.startedAt + WARM_UP_SECONDS * 1000);
    windows.begin(`before the ${CHANGES[0].change}`);
    const resharded: Resharded[] = [];
    let from: number = SHARDS;
    for (const [i, { change, shards }] of CHANGES.entries()) {
      await sleepUntil(flow.startedAt + (WARM_UP_SECONDS + (i + 1) * WINDOW_SECONDS) * 1000);
      if (flow.failed()) break;
      progress(`${RESHARD}: ${change} ${from} → ${shards}`);
      windows.begin(`from the ${change}`);
      const atSecond = flow.second();
      const began = performance.now();
      const result = await reshardStream(admin.kinesis, stream, shards);
      resharded.push({
        change,
        from,
        to: shards,
        atSecond,
        result,
        reshardMs: performance.now() - began,
        doneAt: Date.now(),
      });
      from = shards;
    }
    await sleepUntil(flow.startedAt + seconds * 1000);
    const measured = windows.end();
    progress(`${RESHARD}: producer stopped, draining`);
    const seen = await flow.drain();
    if (seen.unacked)
      progress(
        `${RESHARD}: ${seen.unacked} messages not acked ${formatNumber(seen.drainSeconds)} s into the drain`,
      );
    // A parent holding a message the drain left unacked cannot finish: no use waiting for it.
    const deadline = performance.now() + (seen.unacked ? 0 : FINISHED_TIMEOUT_MS);
    const changes: ReshardChange[] = [];
    for (const r of resharded) changes.push(await describeChange(runtime, r, seen, deadline));
    return {
      queue: QUEUE,
      rate,
      workers: WORKERS,
      warmUpSeconds: WARM_UP_SECONDS,
      windowSeconds: WINDOW_SECONDS,
      loadAverage: { start: loadAtStart, end: loadavg()[0] ?? 0 },
      ...seen,
      changes,
      windows: measured,
    };
  } finally {
    // A reshard that threw leaves the flow running: it stops before the runtime closes.
    await flow?.stop();
    admin.destroy();
    await runtime.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Windows of the phase, each from one begin() to the next: the process's CPU and the runtime's requests. */
function windowMeter(runtime: Runtime, second: () => number) {
  const { meter } = runtime.clients;
  const windows: ReshardWindow[] = [];
  let open: { window: string; fromSecond: number; at: number; cpu: NodeJS.CpuUsage } | undefined;
  const close = () => {
    const at = performance.now();
    if (open) {
      const seconds = (at - open.at) / 1000;
      const cpu = process.cpuUsage(open.cpu);
      const requests = meter.snapshot().requests;
      windows.push({
        window: open.window,
        fromSecond: open.fromSecond,
        seconds,
        cpuPerSecond: (cpu.user + cpu.system) / 1e6 / seconds,
        requestsPerSecond: Object.fromEntries(Object.entries(requests).map(([op, n]) => [op, n / seconds])),
      });
    }
    return at;
  };
  return {
    begin(window: string) {
      const at = close();
      meter.reset();
      open = { window, fromSecond: second(), at, cpu: process.cpuUsage() };
    },
    end() {
      close();
      open = undefined;
      return windows;
    },
  };
}

function sleepUntil(at: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, at - performance.now())));
}

/** What the producer and workers saw, once drained. */
type Seen = Pick<
  ReshardingReport,
  | 'ackedPerSecond'
  | 'acceptedPerSecond'
  | 'accepted'
  | 'unacked'
  | 'drainSeconds'
  | 'redelivered'
  | 'orderViolations'
>;

/** The queue's producer and workers, running. */
interface Flow {
  startedAt: number;
  /** The second of the phase it is now. */
  second(): number;
  failed(): boolean;
  /** Stops producing, waits until every accepted message is acked (or the drain stalls or runs out). */
  drain(): Promise<Seen>;
  /** Stops producer and workers at once. */
  stop(): Promise<void>;
}

/** Produces `rate` msg/s until drained, while WORKERS workers receive and ack. */
function startFlow(api: Endpoint, rate: number, messages: number): Flow {
  const startedAt = performance.now();
  const second = () => Math.floor((performance.now() - startedAt) / 1000);
  const keys = keyOf(KEYS, messages);
  const requests = new Map<number, ProduceRequest>();
  const requestOf = (order: number) => {
    const request = requests.get(order);
    if (!request) throw new Error(`received message ${order} of ${QUEUE}, which was never produced`);
    return request;
  };
  const keyOrder = keyOrderCheck(keys, requestOf, 'delivered');
  const orders = new Map<string, number>();
  const deliveries = new Map<string, number>();
  const acked: number[] = [];
  const accepted: number[] = [];
  const acceptedOrders = new Set<number>();
  const ackedOrders = new Set<number>();
  let redelivered = 0;
  let producing = true;
  let producerDone = false;
  let stoppedAt = Number.POSITIVE_INFINITY;
  let lastAckAt = 0;
  let failure: unknown;
  const fail = (err: unknown) => {
    failure ??= err;
  };
  const count = (perSecond: number[], n: number) => {
    const s = second();
    perSecond[s] = (perSecond[s] ?? 0) + n;
  };
  const hooks: WorkerHooks = {
    stopped: () =>
      failure !== undefined ||
      (producerDone && ackedOrders.size >= acceptedOrders.size) ||
      performance.now() > Math.min(stoppedAt + DRAIN_CAP_MS, Math.max(stoppedAt, lastAckAt) + DRAIN_STALL_MS),
    onDelivered: (m) => {
      const n = (deliveries.get(m.message_id) ?? 0) + 1;
      deliveries.set(m.message_id, n);
      if (n > 1) {
        redelivered++;
        return;
      }
      const order = orderOf(m);
      orders.set(m.message_id, order);
      keyOrder.firstDelivered(m.message_id, order);
    },
    onAcked: (ids) => {
      count(acked, ids.length);
      lastAckAt = performance.now();
      for (const id of ids) {
        const order = orders.get(id);
        if (order !== undefined) ackedOrders.add(order);
      }
    },
    // Once producing stopped, a partial batch of receipts is acked at once.
    nothingMoreComing: () => producerDone,
  };
  const producer = produce(api, QUEUE, {
    messages,
    batchSize: WORKLOAD.produceBatch,
    inFlight: WORKLOAD.produceInFlight,
    ids: 'server',
    keyOf: keys,
    perSecond: rate,
    stopped: () => !producing || failure !== undefined,
    onSend: (sent, at) => {
      const request: ProduceRequest = { sentAt: at };
      for (const order of sent) requests.set(order, request);
    },
    onAccepted: (sent, at) => {
      const request = requests.get(sent[0] as number);
      if (request) request.acceptedAt = at;
      count(accepted, sent.length);
      for (const order of sent) acceptedOrders.add(order);
    },
  })
    .catch(fail)
    .finally(() => {
      producerDone = true;
      stoppedAt = performance.now();
    });
  const workers = Array.from({ length: WORKERS }, (_, id) =>
    workerLoop(api, QUEUE, { id, nackFirstAttempt: false }, hooks).catch(fail),
  );
  const done = Promise.all([producer, ...workers]);
  return {
    startedAt,
    second,
    failed: () => failure !== undefined,
    async drain() {
      producing = false;
      await done;
      if (failure !== undefined) throw failure;
      const seconds = second() + 1;
      const perSecond = (xs: number[]) => Array.from({ length: seconds }, (_, s) => xs[s] ?? 0);
      let unacked = 0;
      for (const order of acceptedOrders) if (!ackedOrders.has(order)) unacked++;
      return {
        ackedPerSecond: perSecond(acked),
        acceptedPerSecond: perSecond(accepted),
        accepted: acceptedOrders.size,
        unacked,
        drainSeconds: (performance.now() - stoppedAt) / 1000,
        redelivered,
        orderViolations: keyOrder.violations(),
      };
    },
    async stop() {
      producing = false;
      failure ??= new Error('stopped');
      await done;
    },
  };
}

/**
 * A change's figures: the rates over the windows before and from it, its lowest seconds, and its
 * release: from the reshard done to the latest `finished_at` among the shards it closed, read
 * from the queue's marks (store/shard-marks.ts).
 */
async function describeChange(
  runtime: Runtime,
  r: Resharded,
  seen: Seen,
  deadline: number,
): Promise<ReshardChange> {
  const window = (xs: readonly number[], from: number) => xs.slice(from, from + WINDOW_SECONDS);
  const ackedBefore = window(seen.ackedPerSecond, r.atSecond - WINDOW_SECONDS);
  const ackedAfter = window(seen.ackedPerSecond, r.atSecond);
  const before = mean(ackedBefore);
  const lowest = Math.min(...ackedAfter);
  const finished = await lastFinishedAt(
    runtime,
    r.result.steps.flatMap((s) => s.shardIds),
    deadline,
  );
  return {
    change: r.change,
    from: r.from,
    to: r.to,
    atSecond: r.atSecond,
    splits: r.result.steps.filter((s) => s.kind === 'split').length,
    merges: r.result.steps.filter((s) => s.kind === 'merge').length,
    reshardMs: r.reshardMs,
    before,
    after: mean(ackedAfter),
    producedBefore: mean(window(seen.acceptedPerSecond, r.atSecond - WINDOW_SECONDS)),
    producedAfter: mean(window(seen.acceptedPerSecond, r.atSecond)),
    lowestBefore: Math.min(...ackedBefore),
    lowest,
    lowestAtSecond: r.atSecond + ackedAfter.indexOf(lowest),
    ratio: lowest / before,
    releaseMs: finished === undefined ? null : finished - r.doneAt,
  };
}

function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
}

/** The latest `finished_at` of the shards once all are finished; undefined if not by the deadline. */
async function lastFinishedAt(
  runtime: Runtime,
  shards: readonly string[],
  deadline: number,
): Promise<number | undefined> {
  for (;;) {
    const finished = await finishedAt(runtime);
    const at = shards.map((shard) => finished.get(shard));
    if (at.every((t) => t !== undefined)) return Math.max(...(at as number[]));
    if (performance.now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** The queue's closed shards marked finished, and when. */
async function finishedAt(runtime: Runtime): Promise<Map<string, number>> {
  const finished = new Map<string, number>();
  let start: Record<string, unknown> | undefined;
  do {
    const out = await runtime.clients.doc.send(
      new QueryCommand({
        TableName: runtime.config.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': shardMarksPk(QUEUE) },
        ConsistentRead: true,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of out.Items ?? [])
      if (item.progress === 'finished') finished.set(String(item.sk), Number(item.finished_at));
    start = out.LastEvaluatedKey;
  } while (start);
  return finished;
}

/** The queue's promises the phase saw broken (messages not acked, a key out of order); empty when none. */
export function reshardBroken(report: ReshardingReport): string[] {
  return [
    ...(report.unacked
      ? [`${report.unacked} not acked ${formatNumber(report.drainSeconds)} s into the drain`]
      : []),
    ...(report.orderViolations ? [`${report.orderViolations} per-key order violations`] : []),
  ];
}

export function printResharding(report: ReshardingReport): void {
  const w = report.windowSeconds;
  console.log(
    `\nResharding under load: ${report.rate} msg/s to an ordered queue (1,000 keys and a hot key with 20 %, ` +
      `max_per_key 10), ${report.workers} workers, ${w} s windows after ${report.warmUpSeconds} s of warm-up`,
  );
  console.log(
    formatTable(
      [
        'change',
        'reshard ms',
        `produced/s before, after`,
        `acks/s before, after (${w} s)`,
        'lowest second before',
        'lowest second after',
        'lowest after ÷ before',
        'last parent finished, ms after',
      ],
      report.changes.map((c) => [
        `${c.change} ${c.from} → ${c.to} (${c.splits} splits, ${c.merges} merges)`,
        c.reshardMs,
        `${formatNumber(c.producedBefore)}, ${formatNumber(c.producedAfter)}`,
        `${formatNumber(c.before)}, ${formatNumber(c.after)}`,
        String(c.lowestBefore),
        `${c.lowest} (s ${c.lowestAtSecond})`,
        `${formatNumber(c.ratio)}${c.ratio < RESHARD_DIP_SHARE ? ' DIP' : ''}`,
        c.releaseMs === null ? 'not finished' : c.releaseMs,
      ]),
    ),
  );
  const operations = [...new Set(report.windows.flatMap((x) => Object.keys(x.requestsPerSecond)))]
    .filter((op) => report.windows.some((x) => (x.requestsPerSecond[op] ?? 0) >= 1))
    .sort();
  console.log(
    `\n${formatTable(
      ['per second', ...report.windows.map((x) => `${x.window} (s ${x.fromSecond})`)],
      [
        ['CPU seconds of the process', ...report.windows.map((x) => x.cpuPerSecond)],
        ...operations.map((op) => [op, ...report.windows.map((x) => x.requestsPerSecond[op] ?? 0)]),
      ],
    )}`,
  );
  console.log(
    `Accepted ${report.accepted}, not acked after the drain (${formatNumber(report.drainSeconds)} s) ` +
      `${report.unacked}, redelivered ${report.redelivered}, ` +
      `per-key order violations ${report.orderViolations}. The machine's load average: ` +
      `${formatNumber(report.loadAverage.start)} at the start, ${formatNumber(report.loadAverage.end)} at the end.`,
  );
}
