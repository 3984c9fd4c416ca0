import { type EndState, groupBy } from './checks.js';
import type { History } from './history.js';

/** What a chaos run did, counted from its history: the figures a run prints. */

export interface Duplicates {
  /** Ids answered `accepted` more than once (a retry after an answer was lost). */
  acceptedMoreThanOnce: number;
  /** Deliveries beyond each life's first, for any reason (nack, lease expiry, kill). */
  redeliveries: number;
  /** Deliveries of a life after its ack was answered `acked` (a replay's copy is a life of its own). */
  afterConfirmedAck: number;
  /** Deliveries of a message after an ack whose answer never came (a kill, a fault), before any confirmed ack. */
  afterUnansweredAck: number;
}

export interface Figures {
  sent: number;
  /** Answered `accepted` or `duplicate`: known to be in the log. */
  accepted: number;
  /** Sent but never answered `accepted` or `duplicate`: not checked. */
  unresolved: number;
  /** Per-message `failed` answers to produce (each retried with the same id). */
  failedResults: number;
  deliveries: number;
  delivered: number;
  acked: number;
  dead: number;
  staleRefused: number;
  unansweredSettles: number;
  duplicates: Duplicates;
  answers: Record<string, number>;
  /** Deliveries of replay copies, of those their retries (attempt 2 and up), and of redriven copies. */
  replayDeliveries: { all: number; retries: number; redriven: number };
}

export function countFigures(history: History, end: EndState): Figures {
  const produced = [...history.produced.values()];
  const accepted = produced.filter((p) => p.accepted + p.duplicate > 0);
  const byId = groupBy(history.deliveries, (d) => d.id);
  const byLife = groupBy(history.deliveries, (d) => d.life);
  const settles = history.deliveries.flatMap((d) => (d.settle ? [d.settle] : []));
  const acked = new Set([
    ...history.deliveries.filter((d) => d.settle?.outcome === 'acked' && !d.replayId).map((d) => d.id),
    ...[...end.ackedByTrace].filter((life) => history.produced.has(life)),
  ]);
  const copies = history.deliveries.filter((d) => d.replayId !== undefined);
  // A copy dead-lettered before a redrive and delivered after its start: the redrive took it.
  const redriven = history.jobs.redrives.flatMap((r) =>
    copies.filter((d) => r.deadAfter.has(d.life) && d.receivedAt > r.requestedAt),
  );

  let afterConfirmedAck = 0;
  let afterUnansweredAck = 0;
  for (const list of byLife.values()) {
    for (const d of list) {
      const acks = list.filter((e) => e.settle?.kind === 'ack' && e.n < d.n);
      const confirmed = acks.some(
        (e) => e.settle?.outcome === 'acked' && (e.settle.answeredAt ?? 0) < d.receivedAt,
      );
      if (confirmed) afterConfirmedAck++;
      else if (acks.some((e) => e.settle?.outcome === 'unknown' && (e.settle.sentAt ?? 0) < d.receivedAt))
        afterUnansweredAck++;
    }
  }

  return {
    sent: produced.length,
    accepted: accepted.length,
    unresolved: produced.length - accepted.length,
    failedResults: produced.reduce((n, p) => n + p.failed, 0),
    deliveries: history.deliveries.length,
    delivered: byId.size,
    acked: acked.size,
    dead: accepted.filter((p) => end.dead.has(p.id)).length,
    staleRefused: settles.filter((s) => s.outcome === 'stale').length,
    unansweredSettles: settles.filter((s) => s.outcome === 'unknown').length,
    duplicates: {
      acceptedMoreThanOnce: produced.filter((p) => p.accepted > 1).length,
      redeliveries: history.deliveries.length - byLife.size,
      afterConfirmedAck,
      afterUnansweredAck,
    },
    answers: Object.fromEntries([...history.answers].sort(([a], [b]) => a.localeCompare(b))),
    replayDeliveries: {
      all: copies.length,
      retries: copies.filter((d) => d.attempt >= 2).length,
      redriven: redriven.length,
    },
  };
}
