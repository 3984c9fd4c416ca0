import { performance } from 'node:perf_hooks';
import { Queue, Worker } from 'bullmq';
import { findRedisServer, REDIS_MISSING, type RedisServer, startRedis } from './redis.js';
import { formatTable, percentile } from './stats.js';
import { payload, WORKLOAD } from './workload.js';

/**
 * The peer side by side: the end-to-end workload on BullMQ with a local Redis, in WORKLOAD's
 * shape. Produce N jobs in batches (addBulk, as many in flight as leaseq's producer) while M
 * workers, each with concurrency WORKLOAD.receiveMax (as a leaseq worker holds the messages of one
 * receive), run a no-op job; a job counts as acked when it completes. Completed jobs are removed,
 * as an ack removes a message from leaseq.
 */

export interface PeerOptions {
  messages: number;
  workerCounts: readonly number[];
  timeoutMs: number;
  progress: (line: string) => void;
}

export interface PeerRun {
  workers: number;
  messages: number;
  seconds: number;
  messagesPerSecond: number;
  latencyMs: { p50: number; p99: number };
}

export type PeerReport =
  | { skipped: string }
  | { redisVersion: string; bullmqVersion: string; concurrency: number; runs: PeerRun[] };

const CONCURRENCY = WORKLOAD.receiveMax;

export async function runPeer(options: PeerOptions): Promise<PeerReport> {
  const binary = findRedisServer();
  if (!binary) return { skipped: REDIS_MISSING };
  let redis: RedisServer | undefined;
  try {
    redis = await startRedis(binary);
    const runs: PeerRun[] = [];
    for (const workers of options.workerCounts) {
      options.progress(
        `BullMQ: ${options.messages} jobs through ${workers} worker(s) × concurrency ${CONCURRENCY}`,
      );
      runs.push(await runOnce(redis.port, workers, options));
    }
    return {
      redisVersion: redis.version,
      bullmqVersion: await bullmqVersion(),
      concurrency: CONCURRENCY,
      runs,
    };
  } finally {
    await redis?.stop();
  }
}

async function runOnce(port: number, workers: number, options: PeerOptions): Promise<PeerRun> {
  // Workers block on Redis: ioredis must not give up on their commands (BullMQ requires null).
  const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };
  const name = `bench-c${workers}`;
  const queue = new Queue(name, {
    connection,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: true },
  });
  const sentAt = new Map<string, number>();
  const latenciesMs: number[] = [];
  let completed = 0;
  let startedAt = 0;
  let finishedAt = 0;
  let settle: { resolve: () => void; reject: (err: unknown) => void } | undefined;
  const done = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  const pool = Array.from(
    { length: workers },
    () =>
      new Worker(
        name,
        async (job) => {
          const sent = sentAt.get(job.id as string);
          if (sent !== undefined && job.attemptsMade === 0) latenciesMs.push(performance.now() - sent);
        },
        { connection, concurrency: CONCURRENCY, autorun: false },
      ),
  );
  for (const w of pool) {
    w.on('completed', () => {
      if (++completed === options.messages) {
        finishedAt = performance.now();
        settle?.resolve();
      }
    });
    w.on('failed', (job, err) => settle?.reject(new Error(`BullMQ job ${job?.id} failed: ${err.message}`)));
    w.on('error', (err) => settle?.reject(err));
  }
  const timer = setTimeout(
    () =>
      settle?.reject(new Error(`BullMQ: ${completed} of ${options.messages} completed after the timeout`)),
    options.timeoutMs,
  );
  try {
    await Promise.all([queue.waitUntilReady(), ...pool.map((w) => w.waitUntilReady())]);
    for (const w of pool) void w.run();
    let next = 0;
    const sender = async () => {
      while (next < options.messages) {
        const first = next;
        next += WORKLOAD.produceBatch;
        const count = Math.min(WORKLOAD.produceBatch, options.messages - first);
        const at = performance.now();
        if (startedAt === 0) startedAt = at;
        const jobs = Array.from({ length: count }, (_, k) => {
          const jobId = `${name}-${first + k}`;
          sentAt.set(jobId, at);
          return { name: 'job', data: payload(first + k), opts: { jobId } };
        });
        await queue.addBulk(jobs);
      }
    };
    await Promise.all([...Array.from({ length: WORKLOAD.produceInFlight }, sender), done]);
  } finally {
    clearTimeout(timer);
    await Promise.all(pool.map((w) => w.close()));
    await queue.close();
  }
  const seconds = (finishedAt - startedAt) / 1000;
  return {
    workers,
    messages: options.messages,
    seconds,
    messagesPerSecond: options.messages / seconds,
    latencyMs: { p50: percentile(latenciesMs, 50), p99: percentile(latenciesMs, 99) },
  };
}

async function bullmqVersion(): Promise<string> {
  const { createRequire } = await import('node:module');
  const require = createRequire(import.meta.url);
  return (require('bullmq/package.json') as { version: string }).version;
}

export interface LeaseqEndToEnd {
  workers: number;
  messagesPerSecond: number;
  latencyMs?: { p50: number; p99: number };
}

export function printPeer(report: PeerReport, leaseq: readonly LeaseqEndToEnd[]): void {
  if ('skipped' in report) {
    console.log(`\nBullMQ peer: skipped: ${report.skipped}.`);
    return;
  }
  console.log(
    `\nPeer side by side: the same workload on BullMQ ${report.bullmqVersion} with redis-server ${report.redisVersion} ` +
      `(workers × concurrency ${report.concurrency}) and on leaseq's local runtime:\n`,
  );
  console.log(
    formatTable(
      [
        'workers',
        'leaseq msg/s',
        'BullMQ msg/s',
        'BullMQ ÷ leaseq',
        'leaseq p50 ms',
        'BullMQ p50 ms',
        'BullMQ p99 ms',
      ],
      report.runs.map((r) => {
        const l = leaseq.find((x) => x.workers === r.workers);
        return [
          String(r.workers),
          l ? l.messagesPerSecond : '-',
          r.messagesPerSecond,
          l ? `${(r.messagesPerSecond / l.messagesPerSecond).toFixed(1)}×` : '-',
          l?.latencyMs ? l.latencyMs.p50 : '-',
          r.latencyMs.p50,
          r.latencyMs.p99,
        ];
      }),
    ),
  );
  console.log(
    'Not like for like in durability: leaseq acknowledges a produce once Kinesis (three AZs on AWS) has it and keeps ' +
      'every state change in DynamoDB; this Redis keeps everything in memory with persistence off. Redis also runs ' +
      'as a process of its own, beside the bench on the same two cores.',
  );
}
