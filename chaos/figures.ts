import { type EndState, groupBy } from './checks.js';
import type { History } from './history.js';

/** What a chaos run did, counted from its history: the figures a run prints. */

export interface Duplicates {
  /** Ids answered `accepted` more than once (a retry after an answer was lost). */
  acceptedMoreThanOnce: number;
  /** Deliveries beyond each message's first, for any reason (nack, lease expiry, kill). */
  redeliveries: number;
  /** Deliveries of a message after its ack was answered `acked`. */
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
}

export function countFigures(history: History, end: EndState): Figures {
  const produced = [...history.produced.values()];
  const accepted = produced.filter((p) => p.accepted + p.duplicate > 0);
  const byId = groupBy(history.deliveries, (d) => d.id);
  const settles = history.deliveries.flatMap((d) => (d.settle ? [d.settle] : []));
  const acked = new Set([
    ...history.deliveries.filter((d) => d.settle?.outcome === 'acked').map((d) => d.id),
    ...end.ackedByTrace,
  ]);

  let afterConfirmedAck = 0;
  let afterUnansweredAck = 0;
  for (const list of byId.values()) {
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
      redeliveries: history.deliveries.length - byId.size,
      afterConfirmedAck,
      afterUnansweredAck,
    },
    answers: Object.fromEntries([...history.answers].sort(([a], [b]) => a.localeCompare(b))),
  };
}
