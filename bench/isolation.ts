import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from '../functions/core/async.js';
import { parseTenantConfig } from '../functions/core/config.js';
import type { DynamoDbEmulator } from '../infra/local/emulators.js';
import { type Endpoint, post } from './http.js';
import { fanOutOf, onBusyStream, type StreamMode, startBenchRuntime } from './runtime.js';
import { formatNumber, formatTable, percentile } from './stats.js';
import { endToEnd, produce, type ReceiveAnswer, WORKLOAD } from './workload.js';

/**
 * One queue's flood does not slow another. A runtime with API Gateway's per-queue throttles on
 * (as the stack declares them) and two queues: `quiet` at 10 msg/s, one a request, to one worker
 * (t1's workload), and `noisy` with a produce quota. Quiet's produce → first delivery latency is
 * measured alone, then beside a flood of noisy far past its quota (FLOOD, from a process of its own
 * at the lowest CPU priority, as if from other machines), then beside noisy produced at its quota
 * while its one slow consumer lets a backlog grow past its window; each time once noisy's load has
 * run SETTLE_MS. The two queues share a stream. Quiet is warmed up first, so `alone` is not its cold
 * start; and the same flood at a bare server of its own (flood-sink.mjs) says what the flood costs
 * this machine whoever refuses it.
 */

export const ISOLATION = 'isolation';
const ADMIN_KEY = 'bench-isolation-key-0123456789';
/** Noisy's produce quota, requests a second: the gateway refuses past twice it. */
const NOISY_REQUESTS_PER_SEC = 10;
/**
 * Noisy's flood: WORKLOAD's 10 KB batches, 2,000 requests a second from 8 senders (the rate an
 * outside run of 8 unpaced senders reached against the function's own quota check), 200 times
 * noisy's quota.
 */
const FLOOD = {
  senders: 8,
  perSecond: 2000,
  batch: WORKLOAD.produceBatch,
  payloadBytes: WORKLOAD.payloadBytes,
};
/** Quiet's workload in each phase: t1's pace, long enough for a p99 of its own. */
const QUIET = { messages: 450, perSecond: 10 };
/** Quiet's messages before `alone`: a new process's first seconds (compiling, connecting) are not its steady state. */
const WARM_UP_MESSAGES = 100;
const TIMEOUT_MS = 3 * 60_000;
/** The niceness a load generator runs at: it yields the CPU to what it measures. */
const LOWEST_PRIORITY = 19;
/**
 * How long noisy's load runs before quiet's measurement starts: quiet is measured beside the
 * flood, not beside the start of the process that sends it.
 */
const SETTLE_MS = 2000;
/** Noisy's slow consumer: a receive of 10 every this long, so its backlog grows at its quota. */
const SLOW_CONSUMER_PAUSE_MS = 1000;

/**
 * Both queues on one stream, as a tenant's queues are by default: noisy's backlog must not hold
 * quiet's records. Read as the bench's streams are (runtime.ts StreamMode): the flood and quiet's
 * 10 msg/s both make the stream busy.
 */
const tenantFile = (mode: StreamMode) => ({
  tenant: 'isolation',
  streams: { shared: { shards: 2, ...fanOutOf(mode) } },
  queues: {
    quiet: {},
    // A window its backlog outgrows at its quota: noisy then lags on the stream (docs/streams.md).
    noisy: { window_size: 1000, rate_limits: { produce: { requests_per_sec: NOISY_REQUESTS_PER_SEC } } },
  },
});

export interface QuietLatency {
  p50: number;
  p99: number;
  messages: number;
}

export type FloodLatency = QuietLatency & { answers: Record<string, number>; requestsPerSecond: number };

export interface IsolationReport {
  alone: QuietLatency;
  /** Noisy flooded far past its quota. */
  flood: FloodLatency;
  /** The same flood at a bare server refusing everything, in a process of its own: the machine's share. */
  floodElsewhere: FloodLatency;
  /** Noisy produced at 90 % of its quota, its backlog growing behind a slow consumer. */
  atQuota: QuietLatency & { produced: number; backlog: number };
}

export async function runIsolation(
  dynamodb: DynamoDbEmulator,
  progress: (line: string) => void,
  options: { streams?: StreamMode; asAws?: boolean } = {},
): Promise<IsolationReport> {
  const dataDir = mkdtempSync(join(tmpdir(), 'leaseq-isolation-'));
  const runtime = await startBenchRuntime(
    parseTenantConfig(tenantFile(options.streams ?? 'busy'), 'isolation tenant'),
    dataDir,
    ADMIN_KEY,
    dynamodb,
    { gatewayThrottles: true, asAws: options.asAws === true },
  );
  // As AWS runs it, quiet's worker waits on the wake channel, as in the other runs.
  const api: Endpoint = {
    url: runtime.url,
    key: ADMIN_KEY,
    ...(options.asAws ? { channelUrl: runtime.channelUrl } : {}),
  };
  try {
    // Quiet's 10 msg/s on two shards and the flood both make the shared stream busy.
    return await onBusyStream(runtime, runtime.config.tenant.queues.quiet?.stream as string, async () => {
      await quiet(api, WARM_UP_MESSAGES);
      progress(`${ISOLATION}: quiet alone, ${QUIET.messages} messages at ${QUIET.perSecond} msg/s`);
      const alone = await quiet(api);

      progress(
        `${ISOLATION}: quiet beside noisy flooded at ${FLOOD.perSecond} req/s by ${FLOOD.senders} senders`,
      );
      const flood = await beside(api, runtime.url);
      progress(`${ISOLATION}: quiet beside the same flood at a bare server of its own`);
      const floodElsewhere = await besideSink(api);
      // The flood emptied noisy's buckets, the gateway's and the quota's: let them fill again.
      await sleep(2000);

      progress(`${ISOLATION}: quiet beside noisy at its quota, a backlog growing behind a slow consumer`);
      let stop = false;
      let produced = 0;
      const perSecond = NOISY_REQUESTS_PER_SEC * 0.9 * WORKLOAD.produceBatch;
      const noisyProducer = produce(api, 'noisy', {
        messages: Math.ceil(perSecond * (QUIET.messages / QUIET.perSecond + 10)),
        batchSize: WORKLOAD.produceBatch,
        inFlight: 2,
        ids: 'server',
        perSecond,
        retryThrottled: true,
        stopped: () => stop,
        onAccepted: (orders) => {
          produced += orders.length;
        },
      });
      let consumed = 0;
      const slowConsumer = (async () => {
        while (!stop) {
          const { messages } = await post<ReceiveAnswer>(api, '/queues/noisy/receive', {
            max_messages: 10,
            wait_seconds: 1,
          });
          await sleep(SLOW_CONSUMER_PAUSE_MS);
          if (messages.length)
            await post(api, '/queues/noisy/ack', { receipts: messages.map((m) => m.receipt) });
          consumed += messages.length;
        }
      })();
      await sleep(SETTLE_MS);
      const atQuota = await quiet(api);
      stop = true;
      await Promise.all([noisyProducer, slowConsumer]);

      return {
        alone,
        flood,
        floodElsewhere,
        atQuota: { ...atQuota, produced, backlog: produced - consumed },
      };
    });
  } finally {
    await runtime.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** What flood.mjs sends back once stopped: its answers by kind, over how long it sent. */
interface FloodReport {
  answers: Record<string, number>;
  seconds: number;
}

/** Quiet's latency while FLOOD's senders post to noisy at `url`. */
async function beside(api: Endpoint, url: string): Promise<FloodLatency> {
  const settings = JSON.stringify({ url, key: ADMIN_KEY, queue: 'noisy', ...FLOOD });
  const flood = spawn(process.execPath, [fileURLToPath(new URL('./flood.mjs', import.meta.url)), settings], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  setPriority(flood.pid as number, LOWEST_PRIORITY);
  const done = new Promise<FloodReport>((resolve, reject) => {
    flood.once('message', (m) => resolve(m as FloodReport));
    flood.once('error', reject);
    flood.once('exit', (code) => reject(new Error(`the flood exited (${code}) before it reported`)));
  });
  // Killed unawaited when quiet's run fails: that failure is the one to report.
  done.catch(() => undefined);
  try {
    await sleep(SETTLE_MS);
    const latency = await quiet(api);
    flood.send('stop');
    const { answers, seconds } = await done;
    const requests = Object.values(answers).reduce((a, b) => a + b, 0);
    return { ...latency, answers, requestsPerSecond: requests / seconds };
  } finally {
    flood.kill();
  }
}

/** `beside` with the flood sent to flood-sink.mjs, started for it and stopped after. */
async function besideSink(api: Endpoint): Promise<FloodLatency> {
  const sink = spawn(process.execPath, [fileURLToPath(new URL('./flood-sink.mjs', import.meta.url))], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const [port] = (await once(sink.stdout, 'data')) as [Buffer];
    return await beside(api, `http://127.0.0.1:${port.toString().trim()}`);
  } finally {
    sink.kill();
  }
}

/** Quiet's t1 workload once: endToEnd fails unless every message arrives and is acked. */
async function quiet(api: Endpoint, messages = QUIET.messages): Promise<QuietLatency> {
  const run = await endToEnd(api, 'quiet', {
    messages,
    workers: 1,
    ids: 'server',
    nackFirstAttempt: false,
    paced: { perSecond: QUIET.perSecond, batch: 1 },
    timeoutMs: TIMEOUT_MS,
    onAllAcked: () => {},
  });
  return {
    p50: percentile(run.latenciesMs, 50),
    p99: percentile(run.latenciesMs, 99),
    messages: run.latenciesMs.length,
  };
}

/** Quiet's p99 beside noisy ÷ alone. */
export function slowdown(report: IsolationReport): {
  flood: number;
  floodElsewhere: number;
  atQuota: number;
} {
  return {
    flood: report.flood.p99 / report.alone.p99,
    floodElsewhere: report.floodElsewhere.p99 / report.alone.p99,
    atQuota: report.atQuota.p99 / report.alone.p99,
  };
}

export function printIsolation(report: IsolationReport): void {
  const ratio = slowdown(report);
  console.log(
    `\nIsolation: quiet (10 msg/s, 1 worker) beside noisy (produce quota ${NOISY_REQUESTS_PER_SEC} req/s), produce → first delivery ms`,
  );
  console.log(
    formatTable(
      ['phase', 'p50', 'p99', 'p99 ÷ alone', 'noisy'],
      [
        ['alone', formatNumber(report.alone.p50), formatNumber(report.alone.p99), '1', '—'],
        floodRow('flood', report.flood, ratio.flood),
        floodRow('flood at a bare server', report.floodElsewhere, ratio.floodElsewhere),
        [
          'at quota',
          formatNumber(report.atQuota.p50),
          formatNumber(report.atQuota.p99),
          formatNumber(ratio.atQuota),
          `${report.atQuota.produced} accepted, backlog ${report.atQuota.backlog}`,
        ],
      ],
    ),
  );
}

function floodRow(phase: string, flood: FloodLatency, ratio: number): string[] {
  const answers = Object.entries(flood.answers).map(([k, n]) => `${k} ${n}`);
  return [
    phase,
    formatNumber(flood.p50),
    formatNumber(flood.p99),
    formatNumber(ratio),
    `${formatNumber(flood.requestsPerSecond)} req/s: ${answers.join(', ')}`,
  ];
}
