import { decodeTime, isValid } from 'ulid';
import { namespaceParts, streamOf, type TenantConfig } from '../core/config.js';
import { deliveryContext, type Envelope } from '../core/envelope.js';
import { MessageNotFoundError } from '../core/errors.js';
import { type EntryStatus, entryStatus, type Range, readPassOnMark } from '../core/ranges.js';
import { copyAdmissionId } from '../core/replay-policy.js';
import { descendants } from '../core/shard-lineage.js';
import { LogLookup } from '../log/lookup.js';
import type { ShardReader } from '../log/shard-reader.js';
import type { ShardDirectory } from '../log/stream.js';
import type { DedupRecord, DedupStore } from '../store/dedup.js';
import type { KeyHolds } from '../store/key-holds.js';
import { type HistoryRecord, type MessageStore, mergeHistory, type StateItem } from '../store/messages.js';
import type { RangeStore } from '../store/ranges.js';
import type { SegmentStore } from '../store/segments.js';
import { type AttemptView, attemptView, iso } from './views.js';

/** "Where is message X?" in one call: its state and what happened to it (docs/contract.md, "Dead letters and operations"). */

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
  /** From the message's envelope, where the log still has it. */
  schema_ref?: string;
  traceparent?: string;
  replay_id?: string;
}

const STATE: Record<StateItem['state'], TraceState> = {
  leased: 'leased',
  delayed: 'delayed',
  acked: 'acked',
  dead: 'dead',
  purged: 'purged',
  ranged: 'pending',
};

const ENTRY_STATE: Record<Exclude<EntryStatus, 'failed'>, TraceState> = {
  free: 'pending',
  leased: 'leased',
  expired: 'leased',
  retrying: 'delayed',
  acked: 'acked',
};

/** How many retries that waited in their ranges trace follows from entry to entry. */
const MAX_HOPS = 100;

export interface MessageTraceDeps {
  tenant: TenantConfig;
  shards: ShardDirectory;
  reader: ShardReader;
  messages: MessageStore;
  dedup: DedupStore;
  ranges: RangeStore;
  segments: SegmentStore;
  holds: KeyHolds;
}

/** A message's entry in the lease layer, as trace shows it. */
interface RangedEntry {
  range: Range;
  index: number;
  envelope: Envelope;
}

export class MessageTrace {
  private readonly lookup: LogLookup;

  constructor(private readonly deps: MessageTraceDeps) {
    this.lookup = new LogLookup(deps.reader);
  }

  /** A server-assigned id (a ULID) has no dedup record: its time says where in the log to look. */
  private async findInLog(queue: string, messageId: string) {
    if (!isValid(messageId)) return undefined;
    const stream = streamOf(this.deps.tenant, queue);
    const shards = await this.deps.shards.shards(stream);
    return this.lookup.findAround(stream, shards, messageId, decodeTime(messageId));
  }

  /** The entry at a position of the lease layer, if it was admitted there. */
  private async entryAt(queue: string, shard: string, sequence: string): Promise<RangedEntry | undefined> {
    const range = await this.deps.ranges.containing(queue, shard, sequence);
    if (!range) return undefined;
    const segment = await this.deps.segments.get(queue, shard, range.segment);
    const entries = segment?.slice(range.segment.offset, range.segment.offset + range.count) ?? [];
    const index = entries.findIndex((e) => e.sequence === sequence);
    const entry = entries[index];
    return entry ? { range, index, envelope: entry.envelope } : undefined;
  }

  /**
   * Where a retry that waited in its range went on: the copy its pass-on mark names, in the log
   * after it (the mark says when it was appended), on the same shard or, once that was resharded,
   * on one descending from it (the copy keeps its partition key).
   */
  private async retryOf(
    queue: string,
    at: { shard: string; sequence: string },
    messageId: string,
    mark: string,
  ) {
    const { appendedAt, names } = readPassOnMark(mark);
    const stream = streamOf(this.deps.tenant, queue);
    const find = (shards: string[]) =>
      shards.length ? this.lookup.findAround(stream, shards, messageId, appendedAt, names) : undefined;
    const known = descendants(await this.deps.shards.lineage(stream), at.shard);
    const found = await find([at.shard, ...known]);
    if (found) return found;
    // The instance's listing may predate a reshard since: the stream is listed again.
    this.deps.shards.forget(stream);
    const fresh = descendants(await this.deps.shards.lineage(stream), at.shard);
    return find(fresh.filter((s) => !known.includes(s)));
  }

  /** `queue` may be a Lambda consumer's namespace: the producer's acceptance is its queue's. */
  async trace(queue: string, messageId: string): Promise<Trace> {
    const [items, accepted] = await Promise.all([
      this.deps.messages.story(queue, messageId),
      this.deps.dedup.get(namespaceParts(queue).queue, messageId),
    ]);
    const item = items.find((i) => i.sk === 'S') as StateItem | undefined;
    const history = mergeHistory(
      items.filter((i) => String(i.sk).startsWith('H#')) as unknown as HistoryRecord[],
      item,
    );
    const marks = items.filter((i) => String(i.sk).startsWith('E#'));
    const copy = await this.latestCopy(queue, messageId, marks, item);
    // An item of a life before the copy's says nothing of where the message is now.
    const state = copy ? undefined : item;
    // Where its current entry is, when that is in the lease layer.
    const position =
      copy ??
      (state?.state === 'ranged'
        ? { shard: state.shard, sequence: state.seq }
        : state
          ? undefined
          : (accepted ?? (await this.findInLog(queue, messageId))));
    const first = position ? await this.entryAt(queue, position.shard, position.sequence) : undefined;
    if (!state && !accepted && !first) throw new MessageNotFoundError(messageId);
    // Retries that waited in their ranges: from entry to entry, to the message's latest.
    const hops: { envelope: Envelope; at: { shard: string; sequence: string } }[] = [];
    let ranged = first;
    let at = position;
    for (let hop = 0; ranged && at && hop < MAX_HOPS; hop++) {
      const mark = ranged.range.passedOn.get(ranged.index);
      const next = mark ? await this.retryOf(queue, at, messageId, mark) : undefined;
      const entry = next && (await this.entryAt(queue, next.shard, next.sequence));
      if (!next || !entry) break;
      hops.push({ envelope: entry.envelope, at: next });
      ranged = entry;
      at = next;
    }

    const events: TraceEvent[] = [];
    const add = (at: number | undefined, event: string, detail: Record<string, unknown> = {}) => {
      if (at !== undefined) events.push({ at: iso(at), event, detail });
    };
    const producedAt =
      accepted?.acceptedAt ??
      state?.produced_at ??
      (ranged ? Date.parse(ranged.envelope.produced_at) : undefined);
    add(
      producedAt,
      'produced',
      accepted
        ? { shard: accepted.shard, sequence: accepted.sequence }
        : ranged && ranged.envelope.entry === 1 && position
          ? { shard: position.shard, sequence: position.sequence }
          : {},
    );
    for (const h of history) {
      add(h.delivered_at, 'delivered', { attempt: h.attempt, consumer_id: h.consumer_id ?? null });
      add(h.failed_at, h.reason === 'lease_expired' ? 'lease_expired' : 'failed', {
        attempt: h.attempt,
        reason: h.reason,
        error: h.error ?? null,
      });
    }
    if (state && state.state !== 'ranged') {
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
    for (const hop of hops.slice(0, -1))
      add(Date.parse(hop.envelope.enqueued_at), 'enqueued', {
        entry: hop.envelope.entry,
        shard: hop.at.shard,
        sequence: hop.at.sequence,
      });
    let rangedState: TraceState | undefined;
    if (ranged && at) {
      const { range, index, envelope } = ranged;
      const status = entryStatus(range, index, Date.now());
      const lease = range.leases.get(index);
      if (envelope.entry > 1)
        add(Date.parse(envelope.enqueued_at), 'enqueued', {
          entry: envelope.entry,
          shard: at.shard,
          sequence: at.sequence,
        });
      const waiting = range.retrying.get(index);
      if (waiting) add(waiting.dueAt, 'retry_due', { attempt: envelope.attempt + 1 });
      if (lease && status !== 'failed')
        add(lease.deliveredAt, 'delivered', {
          attempt: envelope.attempt,
          consumer_id: lease.consumerId ?? null,
        });
      if (status === 'acked') add(range.ackedAt, 'acked');
      // A failed entry's message has an item of its own, which says where it went, unless the
      // entry went into its key's hold area (an ordered queue's Lambda consumer).
      if (status !== 'failed') rangedState = ENTRY_STATE[status];
      else if (
        envelope.key !== undefined &&
        (!state || state.state === 'ranged') &&
        (await this.deps.holds.has(queue, envelope.key, at.sequence))
      )
        rangedState = 'held';
    }
    for (const m of marks)
      add(Date.parse(String(m.at)), String(m.event), (m.detail as Record<string, unknown>) ?? {});
    events.sort((a, b) => a.at.localeCompare(b.at));

    return {
      message_id: messageId,
      state: rangedState ?? (state ? STATE[state.state] : 'pending'),
      shard: (hops.length ? at?.shard : undefined) ?? state?.shard ?? position?.shard ?? null,
      sequence: (hops.length ? at?.sequence : undefined) ?? state?.seq ?? position?.sequence ?? null,
      enqueued_at: producedAt !== undefined ? iso(producedAt) : null,
      attempts: history.map(attemptView),
      events,
      ...deliveryContext((first ?? ranged)?.envelope ?? (await this.storedBody(state)) ?? {}),
    };
  }

  /**
   * Where the latest replay's copy of the message was admitted, when it is the message's latest
   * life (decision 0016): a copy acked on its first delivery leaves no item, and the producer's
   * dedup record names the message it copies. Undefined when the item is the copy's (it failed
   * once) or later, or when no replay took it.
   */
  private async latestCopy(
    queue: string,
    messageId: string,
    marks: readonly Record<string, unknown>[],
    item: StateItem | undefined,
  ): Promise<DedupRecord | undefined> {
    const replayed = marks
      .filter((m) => m.event === 'replayed')
      .map((m) => ({
        at: Date.parse(String(m.at)),
        replayId: (m.detail as { replay_id?: unknown })?.replay_id,
      }))
      .sort((a, b) => b.at - a.at)[0];
    if (typeof replayed?.replayId !== 'string' || (item && item.produced_at >= replayed.at)) return undefined;
    return this.deps.dedup.get(namespaceParts(queue).queue, copyAdmissionId(messageId, replayed.replayId));
  }

  /** A message out of the lease layer (delayed, dead, acked there): its body as its item keeps it. */
  private async storedBody(state: StateItem | undefined) {
    return state ? (await this.deps.messages.bodies([state])).get(state.pk) : undefined;
  }
}
