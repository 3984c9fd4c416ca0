import { performance } from 'node:perf_hooks';

/**
 * The load a user puts on leaseq, over HTTP with fetch (the path a real client takes):
 * producers sending batches, and worker loops that receive, then ack what they got.
 */

export interface Endpoint {
  url: string;
  key: string;
  /** Counts every request made through this endpoint (API Gateway requests and api Lambda invocations). */
  tally?: ApiTally;
}

/** HTTP requests the workload made, by route, and how long each took at the client. */
export class ApiTally {
  requests: Record<string, number> = {};
  /** Summed wall time of the requests: what the api function would be billed for, long polls included. */
  seconds = 0;
  emptyReceives = 0;
  readonly latenciesMs: Record<string, number[]> = {};

  record(route: string, ms: number): void {
    this.requests[route] = (this.requests[route] ?? 0) + 1;
    this.seconds += ms / 1000;
    const latencies = this.latenciesMs[route] ?? [];
    latencies.push(ms);
    this.latenciesMs[route] = latencies;
  }

  get total(): number {
    return Object.values(this.requests).reduce((a, b) => a + b, 0);
  }

  snapshot(): ApiTallySnapshot {
    return {
      requests: { ...this.requests },
      total: this.total,
      seconds: this.seconds,
      emptyReceives: this.emptyReceives,
    };
  }
}

export interface ApiTallySnapshot {
  requests: Record<string, number>;
  total: number;
  seconds: number;
  emptyReceives: number;
}

interface ProduceAnswer {
  results: { message_id: string; status: string }[];
}

interface ReceiveAnswer {
  messages: { message_id: string; receipt: string }[];
}

interface AckAnswer {
  results: { receipt: string; status: string }[];
}

/** Far above a receive's 1 s long poll or a 500-message produce on a loaded machine. */
const REQUEST_TIMEOUT_MS = 30_000;

async function post<T>(api: Endpoint, path: string, body: unknown): Promise<T> {
  const startedAt = performance.now();
  const res = await fetch(`${api.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    // A request that never answers must fail the run, not hang it.
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  const route = path.endsWith('/messages') ? 'produce' : path.slice(path.lastIndexOf('/') + 1);
  api.tally?.record(route, performance.now() - startedAt);
  // A benchmark that silently counts errors as throughput would measure the wrong thing.
  if (res.status !== 200) throw new Error(`POST ${path} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

/** GET of an admin route (stats); not counted in the tally: the bench's own look, not the workload. */
export async function getJson<T>(api: Endpoint, path: string): Promise<T> {
  const res = await fetch(`${api.url}${path}`, {
    headers: { authorization: `Bearer ${api.key}` },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

export const PAYLOAD_BYTES = 200;

/** A plausible job of exactly PAYLOAD_BYTES bytes of JSON, so every run moves the same bytes. */
export function payload(index: number): unknown {
  const job = { order: index, customer: `c-${index % 997}`, action: 'ship', note: '' };
  job.note = 'x'.repeat(Math.max(0, PAYLOAD_BYTES - JSON.stringify(job).length));
  return job;
}

export interface ProduceOptions {
  messages: number;
  batchSize: number;
  /** Produce requests in flight at once. */
  inFlight: number;
  /** Called with each batch's message ids just before its request is sent. */
  onSend?: (ids: readonly string[], at: number) => void;
  /** Checked before each batch: a failed run stops producing. */
  stopped?: () => boolean;
}

/** Produces messages `${queue}-0` … with client-chosen ids, as the client SDK does; all must be accepted. */
export async function produce(api: Endpoint, queue: string, options: ProduceOptions): Promise<void> {
  const batches = Math.ceil(options.messages / options.batchSize);
  let next = 0;
  const sender = async () => {
    while (next < batches && !options.stopped?.()) {
      const first = next++ * options.batchSize;
      const count = Math.min(options.batchSize, options.messages - first);
      const messages = Array.from({ length: count }, (_, k) => ({
        message_id: `${queue}-${first + k}`,
        payload: payload(first + k),
      }));
      options.onSend?.(
        messages.map((m) => m.message_id),
        performance.now(),
      );
      const { results } = await post<ProduceAnswer>(api, `/queues/${queue}/messages`, { messages });
      const refused = results.find((r) => r.status !== 'accepted');
      if (refused) throw new Error(`produce to ${queue}: ${JSON.stringify(refused)}`);
    }
  };
  await Promise.all(Array.from({ length: options.inFlight }, sender));
}

export interface WorkerHooks {
  stopped: () => boolean;
  /** Each delivery, as it arrives (before its ack is sent). */
  onDelivered?: (message: { message_id: string }, receivedAt: number) => void;
  /** After an ack request answered, with the ids it acked. */
  onAcked: (ids: readonly string[]) => void;
}

/** One worker: receive up to 10 (long poll 1 s), ack them all in one request, until stopped. */
async function workerLoop(api: Endpoint, queue: string, id: number, hooks: WorkerHooks): Promise<void> {
  while (!hooks.stopped()) {
    const { messages } = await post<ReceiveAnswer>(api, `/queues/${queue}/receive`, {
      max_messages: 10,
      wait_seconds: 1,
      consumer_id: `bench-worker-${id}`,
    });
    if (messages.length === 0) {
      if (api.tally) api.tally.emptyReceives++;
      continue;
    }
    const receivedAt = performance.now();
    for (const m of messages) hooks.onDelivered?.(m, receivedAt);
    const { results } = await post<AckAnswer>(api, `/queues/${queue}/ack`, {
      receipts: messages.map((m) => m.receipt),
    });
    const refused = results.find((r) => r.status !== 'acked');
    if (refused) throw new Error(`ack on ${queue}: ${refused.status}`);
    hooks.onAcked(messages.map((m) => m.message_id));
  }
}

/** Runs loops until one fails or all end; the first error stops the others through `stop`. */
async function runLoops(loops: (() => Promise<void>)[], stop: (err: unknown) => void): Promise<void> {
  await Promise.all(loops.map((loop) => loop().catch(stop)));
}

export interface EndToEndOptions {
  messages: number;
  workers: number;
  timeoutMs: number;
  /** Called the moment the last message is acked, before workers wind down (to snapshot the meter). */
  onAllAcked: () => void;
}

export interface EndToEndRun {
  /** performance.now() of the first produce request and of the last ack's answer. */
  startedAt: number;
  finishedAt: number;
  /** Produce request sent → first delivery received, per message. */
  latenciesMs: number[];
  /** Deliveries of a message already delivered once (at-least-once shows here). */
  redelivered: number;
}

/** Produces while `workers` loops receive and ack, until every message is acked. */
export async function endToEnd(api: Endpoint, queue: string, options: EndToEndOptions): Promise<EndToEndRun> {
  const sentAt = new Map<string, number>();
  const latenciesMs: number[] = [];
  const delivered = new Set<string>();
  const acked = new Set<string>();
  let redelivered = 0;
  let finishedAt = 0;
  let failure: unknown;
  const deadline = performance.now() + options.timeoutMs;
  // The first error stops every loop, so a broken run fails at once rather than at the timeout.
  const stopped = () =>
    failure !== undefined || acked.size >= options.messages || performance.now() > deadline;
  const hooks: WorkerHooks = {
    stopped,
    onDelivered: (m, receivedAt) => {
      const sent = sentAt.get(m.message_id);
      if (sent === undefined) throw new Error(`received ${m.message_id}, which was never produced`);
      if (delivered.has(m.message_id)) redelivered++;
      else {
        delivered.add(m.message_id);
        latenciesMs.push(receivedAt - sent);
      }
    },
    onAcked: (ids) => {
      for (const id of ids) acked.add(id);
      if (acked.size >= options.messages && finishedAt === 0) {
        finishedAt = performance.now();
        options.onAllAcked();
      }
    },
  };
  let startedAt = 0;
  await runLoops(
    [
      () =>
        produce(api, queue, {
          messages: options.messages,
          batchSize: 100,
          inFlight: 1,
          onSend: (ids, at) => {
            if (startedAt === 0) startedAt = at;
            for (const id of ids) sentAt.set(id, at);
          },
          stopped,
        }),
      ...Array.from({ length: options.workers }, (_, i) => () => workerLoop(api, queue, i, hooks)),
    ],
    (err) => {
      failure ??= err;
    },
  );
  if (failure !== undefined) throw failure;
  if (finishedAt === 0) {
    throw new Error(
      `${queue}: only ${acked.size} of ${options.messages} messages acked after ${options.timeoutMs / 1000} s`,
    );
  }
  return { startedAt, finishedAt, latenciesMs, redelivered };
}

export interface ConsumeOptions {
  /** Stop once this many messages are acked (a batch in hand is still acked, so a few more may be). */
  messages: number;
  workers: number;
  timeoutMs: number;
  /** Called with the number acked so far, the moment it reaches `messages` (to snapshot the meters). */
  onAllAcked: (acked: number) => void;
}

/** Receives and acks what is already in the queue, producing nothing; per-request latencies are in the tally. */
export async function consume(
  api: Endpoint,
  queue: string,
  options: ConsumeOptions,
): Promise<{ acked: number }> {
  let acked = 0;
  let done = false;
  let failure: unknown;
  const deadline = performance.now() + options.timeoutMs;
  const hooks: WorkerHooks = {
    stopped: () => failure !== undefined || acked >= options.messages || performance.now() > deadline,
    onAcked: (ids) => {
      acked += ids.length;
      if (acked >= options.messages && !done) {
        done = true;
        options.onAllAcked(acked);
      }
    },
  };
  await runLoops(
    Array.from({ length: options.workers }, (_, i) => () => workerLoop(api, queue, i, hooks)),
    (err) => {
      failure ??= err;
    },
  );
  if (failure !== undefined) throw failure;
  if (!done) throw new Error(`${queue}: only ${acked} of ${options.messages} messages acked in time`);
  return { acked };
}
