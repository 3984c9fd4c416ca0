import { namespaceParts } from '../core/config.js';
import { MessageNotFoundError } from '../core/errors.js';
import type { DedupStore } from '../store/dedup.js';
import type { HistoryRecord, MessageStore, StateItem } from '../store/messages.js';
import { type AttemptView, attemptView, iso } from './views.js';

/** "Where is message X?" in one call: its state and what happened to it (DESIGN §5). */

export type TraceState = 'pending' | 'leased' | 'delayed' | 'acked' | 'dead' | 'held' | 'purged';

export interface TraceEvent {
  at: string;
  event: string;
  detail: Record<string, unknown>;
}

export interface Trace {
  message_id: string;
  state: TraceState;
  shard: string | null;
  sequence: string | null;
  enqueued_at: string | null;
  attempts: AttemptView[];
  events: TraceEvent[];
}

const STATE: Record<StateItem['state'], TraceState> = {
  ready: 'pending',
  requeued: 'pending',
  leased: 'leased',
  delayed: 'delayed',
  acked: 'acked',
  dead: 'dead',
  held: 'held',
  purged: 'purged',
};

export class Tracer {
  constructor(
    private readonly messages: MessageStore,
    private readonly dedup: DedupStore,
  ) {}

  /** `queue` may be a Lambda consumer's namespace: the producer's acceptance is its queue's. */
  async trace(queue: string, messageId: string): Promise<Trace> {
    const [items, accepted] = await Promise.all([
      this.messages.story(queue, messageId),
      this.dedup.get(namespaceParts(queue).queue, messageId),
    ]);
    const state = items.find((i) => i.sk === 'S') as StateItem | undefined;
    const history = items.filter((i) => String(i.sk).startsWith('H#')) as unknown as HistoryRecord[];
    const marks = items.filter((i) => String(i.sk).startsWith('E#'));
    if (!state && !accepted) throw new MessageNotFoundError(messageId);

    const events: TraceEvent[] = [];
    const add = (at: number | undefined, event: string, detail: Record<string, unknown> = {}) => {
      if (at !== undefined) events.push({ at: iso(at), event, detail });
    };
    add(
      accepted?.acceptedAt ?? state?.produced_at,
      'produced',
      accepted ? { shard: accepted.shard, sequence: accepted.sequence } : {},
    );
    for (const h of history) {
      add(h.delivered_at, 'delivered', { attempt: h.attempt, consumer_id: h.consumer_id ?? null });
      add(h.failed_at, h.reason === 'lease_expired' ? 'lease_expired' : 'failed', {
        attempt: h.attempt,
        reason: h.reason,
        error: h.error ?? null,
      });
    }
    if (state) {
      if (state.entry > 1 || state.state !== 'requeued')
        add(state.enqueued_at, 'enqueued', { entry: state.entry, shard: state.shard, sequence: state.seq });
      if (state.state === 'leased' || state.state === 'acked') {
        add(state.delivered_at, 'delivered', {
          attempt: state.attempt,
          consumer_id: state.consumer_id ?? null,
        });
      }
      if (state.state === 'acked') add((state as StateItem & { acked_at?: number }).acked_at, 'acked');
      if (state.state === 'delayed') add(state.due_at, 'retry_due', { attempt: state.attempt });
    }
    for (const m of marks)
      add(Date.parse(String(m.at)), String(m.event), (m.detail as Record<string, unknown>) ?? {});
    events.sort((a, b) => a.at.localeCompare(b.at));

    return {
      message_id: messageId,
      state: state ? STATE[state.state] : 'pending',
      shard: state?.shard ?? accepted?.shard ?? null,
      sequence: state?.seq ?? accepted?.sequence ?? null,
      enqueued_at: state ? iso(state.produced_at) : accepted ? iso(accepted.acceptedAt) : null,
      attempts: history.map(attemptView),
      events,
    };
  }
}
