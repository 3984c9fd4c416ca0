import { type ApiRule, type Delivery, type History, lifeOf } from './history.js';

/**
 * The invariants a chaos run must keep (docs/contract.md, "Guarantees"), checked on its history and on the queues'
 * state after the drain. Each answers every violation it found, with the history's own times
 * (seconds since the run started), so a failure names its messages and moments.
 */

/**
 * The end state, by life (history.ts `lifeOf`): a message id alone for the producer's message, or
 * with the replay's id for a replay's copy.
 */
export interface EndState {
  /** Dead letters of both queues: life → when it died. */
  dead: Map<string, number>;
  /** Lives whose ack went unanswered (a kill, a fault) and whose trace says acked. */
  ackedByTrace: Set<string>;
  /** Messages of the push queue whose Lambda consumer call returned (push-calls.ts). */
  handled: Set<string>;
  /** What the server says of each message still unsettled when the drain ended. */
  unsettledStates: Map<string, string>;
}

export interface Invariant {
  name: string;
  ok: boolean;
  violations: string[];
}

export function checkInvariants(history: History, end: EndState, orderedQueue: string): Invariant[] {
  const at = timeIn(history);
  const byLife = groupBy(history.deliveries, (d) => d.life);
  const apiRule = (rule: ApiRule): Invariant =>
    invariant(
      `API: ${rule}`,
      history.violations.filter((v) => v.rule === rule).map((v) => `${at(v.at)} ${v.operation}: ${v.what}`),
    );
  return [
    noAcceptedMessageLost(history, end, byLife, at),
    invariant(
      'no message both acked and dead',
      [...byLife.keys()].filter((life) => confirmedAck(byLife.get(life)) && end.dead.has(life)),
    ),
    keyOrder(history, end, orderedQueue, at),
    noStaleReceiptSucceeded(byLife, at),
    noDeliveryAfterConfirmedAck(byLife, at),
    invariant(
      'every delivery is of a message sent, with its payload intact',
      history.deliveries
        .filter((d) => !d.payloadIntact)
        .map((d) => `${d.id} delivered ${at(d.receivedAt)} (attempt ${d.attempt})`),
    ),
    apiRule('no 500'),
    apiRule('Retry-After on 503'),
    apiRule('failed is retryable'),
  ];
}

/**
 * Once every accepted message ended acked or dead, nothing is left waiting, in flight or delayed
 * in any queue or consumer: on the lease layer, every shard's window (head − commit point) is empty.
 */
export function emptyAfterDrain(
  left: readonly { name: string; ready: number; inFlight: number; delayed: number; held: number }[],
): Invariant {
  return invariant(
    'every queue and consumer empty after the drain (no window left open)',
    left
      .filter((l) => l.ready + l.inFlight + l.delayed + l.held > 0)
      .map(
        (l) => `${l.name}: ${l.ready} waiting, ${l.inFlight} in flight, ${l.delayed} delayed, ${l.held} held`,
      ),
  );
}

export type At = (ms: number | undefined) => string;

/** A failure names its moments as seconds since the run started. */
export function timeIn(history: History): At {
  return (ms) => (ms === undefined ? 'never' : `+${((ms - history.startedAt) / 1000).toFixed(3)}s`);
}

/** A life a run must see end acked or dead: each accepted message, and each copy of a replay it started. */
export interface Life {
  life: string;
  id: string;
  queue: string;
  replayId?: string;
}

export function expectedLives(history: History): Life[] {
  return [
    ...[...history.produced.values()]
      .filter((p) => p.accepted + p.duplicate > 0)
      .map((p) => ({ life: p.id, id: p.id, queue: p.queue })),
    ...history.jobs.replays.flatMap((r) =>
      r.ids.map((id) => ({ life: lifeOf(id, r.replayId), id, queue: r.queue, replayId: r.replayId })),
    ),
  ];
}

/** Whether a life is known to have ended: acked (answered, or by its trace), dead, or handled by the Lambda consumer. */
export function settled(
  life: string,
  byLife: Map<string, Delivery[]>,
  end: Pick<EndState, 'dead' | 'ackedByTrace' | 'handled'>,
): boolean {
  return (
    confirmedAck(byLife.get(life)) ||
    end.ackedByTrace.has(life) ||
    end.dead.has(life) ||
    end.handled.has(life)
  );
}

/**
 * Each message answered `accepted` (or `duplicate`: already in the log) ends acked or
 * dead-lettered, and so does each copy of a replay.
 */
function noAcceptedMessageLost(
  history: History,
  end: EndState,
  byLife: Map<string, Delivery[]>,
  at: At,
): Invariant {
  const lost: string[] = [];
  for (const { life, id, queue, replayId } of expectedLives(history)) {
    if (settled(life, byLife, end)) continue;
    const deliveries = byLife.get(life) ?? [];
    const last = deliveries.at(-1);
    const p = history.produced.get(id);
    const origin = replayId
      ? `copy of replay ${replayId}`
      : `sent ${at(p?.sentAt)}, accepted ×${p?.accepted}, duplicate ×${p?.duplicate}`;
    lost.push(
      `${queue}/${id}: ${origin}, ` +
        `${deliveries.length} deliveries${last ? ` (last ${at(last.receivedAt)}, attempt ${last.attempt}, ${last.settle?.kind ?? 'not settled'} → ${last.settle?.outcome ?? '-'})` : ''}; ` +
        `the server says: ${end.unsettledStates.get(life) ?? 'not asked'}`,
    );
  }
  return invariant('no accepted message lost (each ends acked or dead)', lost);
}

/**
 * Ordered queue, per key (its messages were produced in `seq` order, each once the previous
 * was in the log). An ack counts from the moment it was sent when it landed or may have
 * (answered `acked`, or never answered); one answered stale did not land.
 * - Each message's first such ack comes in `seq` order.
 * - No message is delivered before such an ack of every earlier message of its key was sent,
 *   or that message was dead-lettered (which parks the key until the drain skips it), but for
 *   earlier ones in the same answer (a per-key batch, `max_per_key`).
 * - No two messages of a key are in flight at once (delivered, not settled, lease running), a
 *   key's batch of one answer counting as one; a nack of one of a batch gives back the rest.
 * A message delivered again after such an ack of its own (at-least-once, after a kill) is a
 * duplicate, counted in the figures, not an order violation.
 */
function keyOrder(history: History, end: EndState, queue: string, at: At): Invariant {
  const violations: string[] = [];
  const deliveries = history.deliveries.filter((d) => d.queue === queue);
  for (const [key, list] of groupBy(deliveries, (d) => d.key ?? '(none)')) {
    const firstAck = new Map<number, number>();
    for (const d of list) {
      const s = d.settle;
      if (d.seq === undefined || s?.kind !== 'ack' || s.outcome === 'stale' || s.outcome === 'invalid')
        continue;
      if (s.sentAt < (firstAck.get(d.seq) ?? Number.POSITIVE_INFINITY)) firstAck.set(d.seq, s.sentAt);
    }

    const acks = [...firstAck].sort(([, a], [, b]) => a - b);
    for (const [i, [seq, sentAt]] of acks.entries()) {
      const [prevSeq, prevAt] = acks[i - 1] ?? [-1, 0];
      if (seq < prevSeq)
        violations.push(`${key}: seq ${seq} acked ${at(sentAt)}, after seq ${prevSeq} (${at(prevAt)})`);
    }

    const idOfSeq = new Map(
      [...history.produced.values()].filter((p) => p.key === key).map((p) => [p.seq, p.id] as const),
    );
    const deadAt = (seq: number) => end.dead.get(idOfSeq.get(seq) ?? '') ?? Number.POSITIVE_INFINITY;
    // When each seq stopped holding the key back: its first ack sent, or its death.
    const released = (seq: number) => Math.min(firstAck.get(seq) ?? Number.POSITIVE_INFINITY, deadAt(seq));
    const redeliveredAfterAck = (d: Delivery) =>
      d.seq !== undefined && (firstAck.get(d.seq) ?? Number.POSITIVE_INFINITY) < d.receivedAt;
    // The same answer: one receive's per-key batch.
    const sameAnswer = (a: Delivery, b: Delivery) =>
      a.consumer === b.consumer && a.receivedAt === b.receivedAt;
    for (const d of list) {
      if (d.seq === undefined) continue;
      const batch = new Set(list.filter((e) => sameAnswer(e, d)).map((e) => e.seq));
      for (let j = 0; j < d.seq; j++) {
        if (released(j) <= d.receivedAt || batch.has(j)) continue;
        violations.push(
          `${key}: seq ${d.seq} delivered ${at(d.receivedAt)} (attempt ${d.attempt}) before seq ${j} was acked ` +
            `(first ack sent ${at(firstAck.get(j))}, dead ${at(end.dead.get(idOfSeq.get(j) ?? ''))})`,
        );
        break;
      }
      if (redeliveredAfterAck(d)) continue;
      // When a delivery stopped holding its key: settled, given back by a nack of an earlier
      // message of its batch, or its lease over.
      const heldUntil = (e: Delivery) =>
        Math.min(
          e.settle?.sentAt ?? Number.POSITIVE_INFINITY,
          ...list
            .filter((b) => sameAnswer(b, e) && (b.seq ?? 0) < (e.seq ?? 0) && b.settle?.kind === 'nack')
            .map((b) => b.settle?.sentAt ?? Number.POSITIVE_INFINITY),
          e.leaseExpiresAt,
        );
      const overlapping = list.find(
        (e) =>
          e.id !== d.id &&
          !sameAnswer(e, d) &&
          e.receivedAt <= d.receivedAt &&
          heldUntil(e) > d.receivedAt &&
          !redeliveredAfterAck(e),
      );
      if (overlapping) {
        violations.push(
          `${key}: seq ${d.seq} delivered ${at(d.receivedAt)} while seq ${overlapping.seq} was in flight ` +
            `(delivered ${at(overlapping.receivedAt)}, lease to ${at(overlapping.leaseExpiresAt)}, ` +
            `settle sent ${at(overlapping.settle?.sentAt)})`,
        );
      }
    }
  }
  return invariant('per-key order on the ordered queue', violations);
}

/**
 * A receipt is stale once a later delivery of its message's life was seen: an ack or nack sent
 * after that must be refused (the later lease bumped the generation before it was handed out).
 * A replay's copy is another life, with receipts of its own.
 */
function noStaleReceiptSucceeded(byLife: Map<string, Delivery[]>, at: At): Invariant {
  const violations: string[] = [];
  for (const [life, list] of byLife) {
    for (const d of list) {
      const s = d.settle;
      if (!s || (s.outcome !== 'acked' && s.outcome !== 'nacked')) continue;
      const later = list.find((e) => e.n > d.n && e.receivedAt < s.sentAt);
      if (later) {
        violations.push(
          `${life}: ${s.kind} of attempt ${d.attempt} (delivered ${at(d.receivedAt)}) sent ${at(s.sentAt)} ` +
            `succeeded although attempt ${later.attempt} was delivered ${at(later.receivedAt)}`,
        );
      }
    }
  }
  return invariant('no ack or nack with a known-stale receipt succeeded', violations);
}

/**
 * An ack answered `acked` ends its life: no delivery of that life is answered after it (a lease
 * taken before the ack landed would have made it stale). A replay's copy, recognised by its
 * `replay_id`, is another life; a copy that lost its `replay_id` is caught here.
 */
function noDeliveryAfterConfirmedAck(byLife: Map<string, Delivery[]>, at: At): Invariant {
  const violations: string[] = [];
  for (const [life, list] of byLife) {
    const ackedAt = Math.min(
      ...list.map((d) =>
        d.settle?.outcome === 'acked'
          ? (d.settle.answeredAt ?? Number.POSITIVE_INFINITY)
          : Number.POSITIVE_INFINITY,
      ),
    );
    for (const d of list.filter((e) => e.receivedAt > ackedAt))
      violations.push(
        `${life}: attempt ${d.attempt} delivered ${at(d.receivedAt)} after an ack answered acked ${at(ackedAt)}`,
      );
  }
  return invariant('no delivery after a confirmed ack (a replay copy counted as its own life)', violations);
}

export function confirmedAck(deliveries: readonly Delivery[] | undefined): boolean {
  return (deliveries ?? []).some((d) => d.settle?.outcome === 'acked');
}

export function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

export function invariant(name: string, violations: string[]): Invariant {
  return { name, ok: violations.length === 0, violations };
}

/** Restarts compared: the first ten beside the last ten, once a run has both. */
const RESTART_SAMPLE = 10;
/** How much slower the last restarts may start than the first before it counts as growth. */
const RESTART_GROWTH = 1.2;

/** The median start time (ms, start to serving) of the first ten restarts and of the last ten. */
export function startTimes(ms: readonly number[]): { first: number; last: number } | undefined {
  if (ms.length < 2 * RESTART_SAMPLE) return undefined;
  const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  return { first: median(ms.slice(0, RESTART_SAMPLE)), last: median(ms.slice(-RESTART_SAMPLE)) };
}

/**
 * What kills leave behind and the data grown since must not make each start do more: a restart
 * after the last kill starts about as fast as one after the first.
 */
export function restartsStayFast(ms: readonly number[]): Invariant {
  const t = startTimes(ms);
  return invariant(
    'restarts stay fast (of 20 or more, the median start of the last 10 within 20 % of the first 10)',
    t && t.last > t.first * RESTART_GROWTH
      ? [
          `first ${RESTART_SAMPLE} ${t.first} ms, last ${RESTART_SAMPLE} ${t.last} ms (${(t.last / t.first).toFixed(2)}×)`,
        ]
      : [],
  );
}
