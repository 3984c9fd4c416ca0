import { performance } from 'node:perf_hooks';
import { seededRandom } from '../chaos/random.js';
import { WakeChannel } from '../client/wake-channel.js';
import { sleep } from '../functions/core/async.js';
import { AnsweredError, type Endpoint, post } from './http.js';

/**
 * The load a user puts on leaseq over its HTTP API: producers sending batches, and worker loops
 * that receive, then ack (or nack once) what they got. Every run, and the BullMQ peer, uses the
 * message shape of WORKLOAD.
 */

/** The workload the cost goals are stated for (docs/performance.md). */
export const WORKLOAD = {
  /** JSON bytes of each payload. */
  payloadBytes: 1024,
  /** Messages per produce request, and produce requests in flight at once. */
  produceBatch: 10,
  produceInFlight: 4,
  /** A receive's max_messages, and its long poll. */
  receiveMax: 10,
  receiveWaitSeconds: 1,
  /** Receipts per ack request: a worker holds receipts until it has this many (or nothing more is coming). */
  ackBatch: 10,
  /** A failed-attempt run nacks each first delivery with this retry_after_seconds. */
  nackRetryAfterSeconds: 1,
  /**
   * A paced run's workers start this long before its first message: its latency is a waiting
   * consumer's, not the first receive's connection set-up racing the first produce.
   */
  pacedHeadStartMs: 200,
} as const;

/** Who names a message: leaseq (a server-assigned id) or the producer (message_id, deduplicated). */
export type IdSource = 'server' | 'producer';

interface ProduceAnswer {
  results: { message_id: string; status: string }[];
}

export interface Delivered {
  message_id: string;
  receipt: string;
  attempt: number;
  payload: unknown;
}

export interface ReceiveAnswer {
  messages: Delivered[];
}

interface AckAnswer {
  results: { receipt: string; status: string }[];
}

interface NackAnswer {
  status: string;
}

interface Job {
  /** The message's index in its run: how a delivery is matched to its produce whoever named it. */
  order: number;
  customer: string;
  action: string;
  note: string;
}

/** A plausible job of exactly WORKLOAD.payloadBytes bytes of JSON, so every run moves the same bytes. */
export function payload(order: number): Job {
  const job = { order, customer: `c-${order % 997}`, action: 'ship', note: '' };
  job.note = 'x'.repeat(Math.max(0, WORKLOAD.payloadBytes - JSON.stringify(job).length));
  return job;
}

/** How an ordered run's messages get their keys. */
export interface OrderedKeys {
  /** Keys messages are spread over. */
  keys: number;
  /** Each message's key drawn at random (the same draw every run); otherwise the keys in turn. */
  random: boolean;
  /** The share of messages, drawn per message, that go to one more key of their own. */
  hotShare?: number;
}

/** Fixed, so two runs of the bench draw the same keys and their figures compare. */
const KEY_SEED = 20_251_201;

/** Each message's key by its order, drawn up front so the order batches are sent in changes nothing. */
export function keyOf(spec: OrderedKeys, messages: number): (order: number) => string {
  const random = seededRandom(KEY_SEED);
  const keys = Array.from({ length: messages }, (_, order) => {
    if (!spec.random) return `k-${order % spec.keys}`;
    return spec.hotShare && random.chance(spec.hotShare) ? 'k-hot' : `k-${random.int(0, spec.keys - 1)}`;
  });
  return (order) => {
    const key = keys[order];
    if (key === undefined) throw new Error(`no key drawn for message ${order}`);
    return key;
  };
}

/** The message's index in its run, from the bench payload it carries. */
export function orderOf(message: Delivered): number {
  const order = (message.payload as Partial<Job> | null)?.order;
  if (typeof order !== 'number') throw new Error(`${message.message_id} carries no bench payload`);
  return order;
}

export interface ProduceOptions {
  messages: number;
  batchSize: number;
  /** Produce requests in flight at once. */
  inFlight: number;
  ids: IdSource;
  /** Each message's key (an ordered queue needs one). */
  keyOf?: (order: number) => string;
  /** Paced: batches sent at this many messages a second (otherwise as fast as answered). */
  perSecond?: number;
  /** Called with each batch's message orders just before its request is sent. */
  onSend?: (orders: readonly number[], at: number) => void;
  /** Called with each batch's message orders once its request answered, all accepted. */
  onAccepted?: (orders: readonly number[], at: number) => void;
  /** Checked before each batch: a failed run stops producing. */
  stopped?: () => boolean;
  /**
   * Sends a batch refused over its quota (429) again after Retry-After, as a producer following
   * the contract does, instead of failing the run: a paced sender that fell behind catches up in
   * a burst its quota may refuse.
   */
  retryThrottled?: boolean;
}

async function sendBatch(
  api: Endpoint,
  queue: string,
  messages: readonly object[],
  retryThrottled: boolean,
): Promise<ProduceAnswer> {
  for (;;) {
    try {
      return await post<ProduceAnswer>(api, `/queues/${queue}/messages`, { messages });
    } catch (err) {
      if (!retryThrottled || !(err instanceof AnsweredError) || err.status !== 429) throw err;
      await new Promise((r) => setTimeout(r, (err.retryAfter ?? 1) * 1000));
    }
  }
}

/** Produces messages 0 … messages-1 (producer ids: `${queue}-${order}`); all must be accepted. */
export async function produce(api: Endpoint, queue: string, options: ProduceOptions): Promise<void> {
  const batches = Math.ceil(options.messages / options.batchSize);
  const startedAt = performance.now();
  let next = 0;
  const sender = async () => {
    while (next < batches && !options.stopped?.()) {
      const first = next++ * options.batchSize;
      if (options.perSecond) {
        const due = startedAt + (first / options.perSecond) * 1000;
        await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())));
      }
      const orders = Array.from(
        { length: Math.min(options.batchSize, options.messages - first) },
        (_, k) => first + k,
      );
      const messages = orders.map((order) => ({
        ...(options.ids === 'producer' ? { message_id: `${queue}-${order}` } : {}),
        ...(options.keyOf ? { key: options.keyOf(order) } : {}),
        payload: payload(order),
      }));
      options.onSend?.(orders, performance.now());
      const { results } = await sendBatch(api, queue, messages, options.retryThrottled === true);
      const refused = results.find((r) => r.status !== 'accepted');
      if (refused) throw new Error(`produce to ${queue}: ${JSON.stringify(refused)}`);
      options.onAccepted?.(orders, performance.now());
    }
  };
  await Promise.all(Array.from({ length: options.inFlight }, sender));
}

/** The failed-attempt workload's rule: a first delivery is nacked, every later one acked. */
function nacked(message: Delivered, nackFirstAttempt: boolean): boolean {
  return nackFirstAttempt && message.attempt === 1;
}

export interface WorkerHooks {
  stopped: () => boolean;
  /** Each delivery, as it arrives (before its ack or nack is sent). */
  onDelivered?: (message: Delivered, receivedAt: number) => void;
  /** After a nack answered (retry due WORKLOAD.nackRetryAfterSeconds later). */
  onNacked?: (message: Delivered, answeredAt: number) => void;
  /** After an ack request answered, with the ids it acked. */
  onAcked: (ids: readonly string[]) => void;
  /** True once no more deliveries are coming for a partial ack batch to wait for. */
  nothingMoreComing?: () => boolean;
}

/**
 * One worker: receive up to WORKLOAD.receiveMax, nack a failed attempt at once, and ack in
 * requests of WORKLOAD.ackBatch receipts. While it holds receipts it does not long-poll: a receive
 * that comes back empty, or nothing more coming, sends what it holds. Runs until stopped.
 */
export async function workerLoop(
  api: Endpoint,
  queue: string,
  worker: { id: number; nackFirstAttempt: boolean },
  hooks: WorkerHooks,
): Promise<void> {
  const held: Delivered[] = [];
  const ack = async (batch: Delivered[]) => {
    const { results } = await post<AckAnswer>(api, `/queues/${queue}/ack`, {
      receipts: batch.map((m) => m.receipt),
    });
    const refused = results.find((r) => r.status !== 'acked');
    if (refused) throw new Error(`ack on ${queue}: ${refused.status}`);
    hooks.onAcked(batch.map((m) => m.message_id));
  };
  const channel = api.channelUrl ? new WakeChannel({ url: api.channelUrl, apiKey: api.key }) : undefined;
  try {
    while (!hooks.stopped()) await workerPass(api, queue, worker, hooks, held, ack, channel);
  } finally {
    channel?.close();
  }
}

/**
 * One receive and what follows it. With a wake channel, an empty receive registers the connection
 * and the worker waits on it (the Worker's way), looking at `stopped` each second while it waits.
 */
async function workerPass(
  api: Endpoint,
  queue: string,
  worker: { id: number; nackFirstAttempt: boolean },
  hooks: WorkerHooks,
  held: Delivered[],
  ack: (batch: Delivered[]) => Promise<void>,
  channel: WakeChannel | undefined,
): Promise<void> {
  const connection = held.length === 0 ? await channel?.ready(3000) : undefined;
  const since = channel?.seen(queue) ?? 0;
  // What the last wake handed this worker comes first, leased as a receive would have answered it.
  const handed = (channel?.handed(queue) ?? []) as Delivered[];
  const { messages } = handed.length
    ? { messages: handed }
    : await post<ReceiveAnswer>(api, `/queues/${queue}/receive`, {
        max_messages: WORKLOAD.receiveMax,
        wait_seconds: held.length > 0 || connection ? 0 : WORKLOAD.receiveWaitSeconds,
        consumer_id: `bench-worker-${worker.id}`,
        ...(connection ? { wake_connection: connection } : {}),
      });
  if (messages.length === 0 && api.tally) api.tally.emptyReceives++;
  const receivedAt = performance.now();
  for (const m of messages) {
    hooks.onDelivered?.(m, receivedAt);
    if (!nacked(m, worker.nackFirstAttempt)) {
      held.push(m);
      continue;
    }
    const { status } = await post<NackAnswer>(api, `/queues/${queue}/nack`, {
      receipt: m.receipt,
      retry_after_seconds: WORKLOAD.nackRetryAfterSeconds,
    });
    if (status !== 'retry_scheduled') throw new Error(`nack on ${queue}: ${status}`);
    hooks.onNacked?.(m, performance.now());
  }
  while (held.length >= WORKLOAD.ackBatch) await ack(held.splice(0, WORKLOAD.ackBatch));
  if (held.length > 0 && (messages.length === 0 || hooks.nothingMoreComing?.())) await ack(held.splice(0));
  if (messages.length > 0 || !connection || !channel) return;
  const until = performance.now() + WORKLOAD.receiveWaitSeconds * 1000;
  while (!hooks.stopped() && performance.now() < until && !(await channel.wait(queue, since, 1000)));
}

/** Runs loops until one fails or all end; the first error stops the others through `stop`. */
async function runLoops(loops: (() => Promise<void>)[], stop: (err: unknown) => void): Promise<void> {
  await Promise.all(loops.map((loop) => loop().catch(stop)));
}

export interface EndToEndOptions {
  messages: number;
  workers: number;
  ids: IdSource;
  /** Each message's first delivery is nacked (retry after WORKLOAD.nackRetryAfterSeconds), its second acked. */
  nackFirstAttempt: boolean;
  /** `batch` messages a request at `perSecond` in all, instead of WORKLOAD's batches as fast as answered. */
  paced?: { perSecond: number; batch: number };
  /** An ordered queue: messages carry keys, and their order per key is checked as they arrive. */
  ordered?: OrderedKeys;
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
  /** A nacked message's retry due (nack answered + its retry_after) → its next delivery received. */
  retryLatenciesMs: number[];
  /** Deliveries beyond those the workload asked for (at-least-once shows here). */
  redelivered: number;
  /** Ordered runs: first deliveries that came after a later message of their key was acked. */
  orderViolations?: number;
}

/** A produce request of a run: when it was sent, and when it answered with all accepted. */
export interface ProduceRequest {
  sentAt: number;
  acceptedAt?: number;
}

/**
 * Per-key order as the workers see it: a message first delivered after a later message of its key
 * was acked (`against: 'acked'`, endToEnd's check) or first delivered (`'delivered'`, stricter:
 * each key's first deliveries in produced order). A redelivery is never one: delivery is at least
 * once, and the same message again is not out of order. Later in the log only where that is known
 * from here: further on in the same produce request, or in a request sent after this one's
 * answered; requests in flight together may land either way round, whatever their orders.
 */
export function keyOrderCheck(
  keyOf: (order: number) => string,
  requestOf: (order: number) => ProduceRequest,
  against: 'acked' | 'delivered' = 'acked',
) {
  const orders = new Map<string, number>();
  const seenByKey = new Map<string, number[]>();
  let violations = 0;
  const before = (a: number, b: number) => {
    const [ra, rb] = [requestOf(a), requestOf(b)];
    return ra === rb ? a < b : ra.acceptedAt !== undefined && ra.acceptedAt < rb.sentAt;
  };
  const seen = (order: number) => {
    const key = keyOf(order);
    const keyOrders = seenByKey.get(key);
    if (keyOrders) keyOrders.push(order);
    else seenByKey.set(key, [order]);
  };
  return {
    firstDelivered(id: string, order: number) {
      orders.set(id, order);
      if (seenByKey.get(keyOf(order))?.some((later) => before(order, later))) violations++;
      if (against === 'delivered') seen(order);
    },
    acked(ids: readonly string[]) {
      if (against !== 'acked') return;
      for (const id of ids) {
        const order = orders.get(id);
        if (order !== undefined) seen(order);
      }
    },
    violations: () => violations,
  };
}

/** Produces (WORKLOAD's batches) while `workers` loops receive and ack, until every message is acked. */
export async function endToEnd(api: Endpoint, queue: string, options: EndToEndOptions): Promise<EndToEndRun> {
  const requests = new Map<number, ProduceRequest>();
  const requestOf = (order: number) => {
    const request = requests.get(order);
    if (!request) throw new Error(`received message ${order} of ${queue}, which was never produced`);
    return request;
  };
  const keyOfOrder = options.ordered && keyOf(options.ordered, options.messages);
  const keyOrder = keyOfOrder && keyOrderCheck(keyOfOrder, requestOf);
  const latenciesMs: number[] = [];
  const retryDue = new Map<string, number>();
  const retryLatenciesMs: number[] = [];
  const deliveries = new Map<string, number>();
  /** Ids whose delivery the workers will ack. */
  const final = new Set<string>();
  const acked = new Set<string>();
  const expectedDeliveries = options.nackFirstAttempt ? 2 : 1;
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
      const order = orderOf(m);
      const { sentAt } = requestOf(order);
      const n = (deliveries.get(m.message_id) ?? 0) + 1;
      deliveries.set(m.message_id, n);
      if (n === 1) {
        latenciesMs.push(receivedAt - sentAt);
        keyOrder?.firstDelivered(m.message_id, order);
      }
      const due = retryDue.get(m.message_id);
      if (due !== undefined) {
        retryLatenciesMs.push(receivedAt - due);
        retryDue.delete(m.message_id);
      }
      if (n > expectedDeliveries) redelivered++;
      if (!nacked(m, options.nackFirstAttempt)) final.add(m.message_id);
    },
    onAcked: (ids) => {
      keyOrder?.acked(ids);
      for (const id of ids) acked.add(id);
      if (acked.size >= options.messages && finishedAt === 0) {
        finishedAt = performance.now();
        options.onAllAcked();
      }
    },
    onNacked: (m, answeredAt) =>
      retryDue.set(m.message_id, answeredAt + WORKLOAD.nackRetryAfterSeconds * 1000),
    nothingMoreComing: () => final.size >= options.messages,
  };
  let startedAt = 0;
  await runLoops(
    [
      async () => {
        if (options.paced) await sleep(WORKLOAD.pacedHeadStartMs);
        await produce(api, queue, {
          messages: options.messages,
          batchSize: options.paced?.batch ?? WORKLOAD.produceBatch,
          inFlight: WORKLOAD.produceInFlight,
          ids: options.ids,
          ...(keyOfOrder ? { keyOf: keyOfOrder } : {}),
          ...(options.paced ? { perSecond: options.paced.perSecond } : {}),
          onSend: (orders, at) => {
            if (startedAt === 0) startedAt = at;
            const request: ProduceRequest = { sentAt: at };
            for (const order of orders) requests.set(order, request);
          },
          onAccepted: (orders, at) => {
            const request = requests.get(orders[0] as number);
            if (request) request.acceptedAt = at;
          },
          stopped,
        });
      },
      ...Array.from(
        { length: options.workers },
        (_, id) => () => workerLoop(api, queue, { id, nackFirstAttempt: options.nackFirstAttempt }, hooks),
      ),
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
  return {
    startedAt,
    finishedAt,
    latenciesMs,
    retryLatenciesMs,
    redelivered,
    ...(keyOrder ? { orderViolations: keyOrder.violations() } : {}),
  };
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
    Array.from(
      { length: options.workers },
      (_, id) => () => workerLoop(api, queue, { id, nackFirstAttempt: false }, hooks),
    ),
    (err) => {
      failure ??= err;
    },
  );
  if (failure !== undefined) throw failure;
  if (!done) throw new Error(`${queue}: only ${acked} of ${options.messages} messages acked in time`);
  return { acked };
}
