import { performance } from 'node:perf_hooks';

/**
 * The load a user puts on leaseq, over HTTP with fetch (the path a real client takes):
 * producers sending batches, and worker loops that receive, then ack what they got.
 */

export interface Endpoint {
  url: string;
  key: string;
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
  const res = await fetch(`${api.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    // A request that never answers must fail the run, not hang it.
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  // A benchmark that silently counts errors as throughput would measure the wrong thing.
  if (res.status !== 200) throw new Error(`POST ${path} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

const PAYLOAD_BYTES = 200;

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
  const stopped = () =>
    failure !== undefined || acked.size >= options.messages || performance.now() > deadline;
  // The first error stops every loop, so a broken run fails at once rather than at the timeout.
  const guarded = (loop: () => Promise<void>) =>
    loop().catch((err: unknown) => {
      failure ??= err;
    });

  const worker = (id: number) => async () => {
    while (!stopped()) {
      const { messages } = await post<ReceiveAnswer>(api, `/queues/${queue}/receive`, {
        max_messages: 10,
        wait_seconds: 1,
        consumer_id: `bench-worker-${id}`,
      });
      if (messages.length === 0) continue;
      const receivedAt = performance.now();
      for (const m of messages) {
        const sent = sentAt.get(m.message_id);
        if (sent === undefined) throw new Error(`received ${m.message_id}, which was never produced`);
        if (delivered.has(m.message_id)) redelivered++;
        else {
          delivered.add(m.message_id);
          latenciesMs.push(receivedAt - sent);
        }
      }
      const { results } = await post<AckAnswer>(api, `/queues/${queue}/ack`, {
        receipts: messages.map((m) => m.receipt),
      });
      const refused = results.find((r) => r.status !== 'acked');
      if (refused) throw new Error(`ack on ${queue}: ${refused.status}`);
      for (const m of messages) acked.add(m.message_id);
      if (acked.size >= options.messages && finishedAt === 0) {
        finishedAt = performance.now();
        options.onAllAcked();
      }
    }
  };
  let startedAt = 0;
  await Promise.all([
    guarded(() =>
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
    ),
    ...Array.from({ length: options.workers }, (_, i) => guarded(worker(i))),
  ]);
  if (failure !== undefined) throw failure;
  if (finishedAt === 0) {
    throw new Error(
      `${queue}: only ${acked.size} of ${options.messages} messages acked after ${options.timeoutMs / 1000} s`,
    );
  }
  return { startedAt, finishedAt, latenciesMs, redelivered };
}
