import { mapLimit } from '../core/async.js';
import type { Envelope } from '../core/envelope.js';
import {
  type KeyDecision,
  keyOpen,
  type SequencerKeyView,
  type SequenceStep,
  sequenceKey,
} from '../core/ordering.js';
import { compareSequence, type EntryStatus, entryStatus } from '../core/ranges.js';
import type { KeyHolds } from '../store/key-holds.js';
import { holdingToken, type KeyHead, type KeyState, type KeyStates } from '../store/key-states.js';
import type { RangeStore } from '../store/ranges.js';

/**
 * Per-key order of an ordered pull queue, decided at admission (core/ordering.ts sequenceKey):
 * each admitter reads a shard in log order and puts a key's messages in their place: the key's
 * head in the ranges, the delay store, or the key's hold area. The key's decisions are written
 * first, one conditional write on the key (`sequenced` as read), so whoever admits the shard
 * (dispatch, produce's fast path, a batch offered again) decides each record of a key once, in
 * log order, and a later admitter of the same records replays what the key says was decided.
 * Then the hold items, then the key's `holding` token (a receiver that empties the hold area
 * clears the key only with the token it read: store/key-states.ts clearHolding), then the ranges.
 * What the key records of an entry is its place in the shard's admission order, not a range of
 * this admitter's layout, so it holds whichever admitter's ranges are written.
 */

export interface KeySequencerDeps {
  keys: KeyStates;
  holds: KeyHolds;
  ranges: RangeStore;
}

export interface SequencedEntry {
  sequence: string;
  envelope: Envelope;
  due: boolean;
}

export interface SequencePlan {
  /** One step per entry, in the order given. */
  steps: SequenceStep[];
  keys: Map<
    string,
    { state: KeyState | undefined; opened: boolean; decision: KeyDecision; entries: SequencedEntry[] }
  >;
}

/**
 * Each admitted entry's place in its shard's admission order (a range's `base` plus its index).
 * Every admitter of a shard puts every record of its run into the ranges after the last one, so
 * an entry's place is the same whoever cuts the ranges and however: what a key's head and hold
 * items record stays true when another admitter's ranges win (store/ranges.ts entryAt).
 */
export type Positions = ReadonlyMap<string, number>;

/** Where a key's head is: its entry's status, or `finished` (acked or failed) below the commit point. */
export type HeadStatus = EntryStatus | 'finished';

/** Keys as read before a plan: each one's state and where its head is. */
export type KeyViews = ReadonlyMap<string, { state: KeyState | undefined; status: HeadStatus | undefined }>;

export class KeySequencer {
  constructor(private readonly deps: KeySequencerDeps) {}

  /**
   * Reads `keys` of one shard as a plan needs them: each state, and where its head is. A head
   * below the shard's commit point (its hint, read beside the states) is finished, which is all a
   * plan needs of it unless it still holds its key (then only an ack releases the key): its range
   * is read only otherwise. Produce's fast path reads the keys it appended while it reads the log
   * (admission/range-admission.ts).
   */
  async views(queue: string, shard: string, keys: readonly string[]): Promise<KeyViews> {
    const [states, commit] = await Promise.all([
      this.deps.keys.getMany(queue, keys),
      this.deps.ranges.commitHint(queue, shard),
    ]);
    return new Map(
      await mapLimit(keys, 16, async (key) => {
        const state = states.get(key);
        const head = state?.head;
        const finished =
          head &&
          state.busy_with !== head.message_id &&
          commit !== undefined &&
          compareSequence(commit, head.sequence) > 0;
        const status: HeadStatus | undefined = !head
          ? undefined
          : finished
            ? 'finished'
            : await headStatus(this.deps.ranges, queue, shard, head);
        return [key, { state, status }] as const;
      }),
    );
  }

  /**
   * What becomes of each entry (of one shard, in log order), from its key as it is now, or as
   * `early` read it (a key it did not read is read now). A key read early is as safe as one read
   * now: its write lands only on the `sequenced` it read and, when it was read free, only on a key
   * still free and unparked (`SequencedKey.opened`).
   */
  async plan(
    queue: string,
    shard: string,
    entries: readonly SequencedEntry[],
    early: KeyViews = new Map(),
  ): Promise<SequencePlan> {
    const byKey = new Map<string, SequencedEntry[]>();
    for (const e of entries) {
      const key = e.envelope.key ?? '';
      byKey.set(key, [...(byKey.get(key) ?? []), e]);
    }
    const unread = [...byKey.keys()].filter((key) => !early.has(key));
    const late = unread.length ? await this.views(queue, shard, unread) : new Map();
    const keys: SequencePlan['keys'] = new Map();
    const stepOf = new Map<SequencedEntry, SequenceStep>();
    for (const [key, list] of byKey) {
      const { state, status } = early.get(key) ?? late.get(key) ?? { state: undefined, status: undefined };
      const seen = view(state, status);
      const decision = sequenceKey(
        seen,
        list.map((e) => ({
          message_id: e.envelope.message_id,
          sequence: e.sequence,
          entry: e.envelope.entry,
          due: e.due,
        })),
      );
      for (const [i, e] of list.entries()) stepOf.set(e, decision.steps[i] as SequenceStep);
      keys.set(key, { state, opened: keyOpen(seen), decision, entries: list });
    }
    return { steps: entries.map((e) => stepOf.get(e) as SequenceStep), keys };
  }

  /** The hold items, then each key's decisions; before the ranges are written. */
  async apply(
    queue: string,
    shard: string,
    plan: SequencePlan,
    positions: Positions,
    ttl: number,
  ): Promise<void> {
    await mapLimit([...plan.keys], 16, async ([key, { state, opened, decision, entries }]) => {
      const last = entries.at(-1) as SequencedEntry;
      // Replayed only (an earlier try wrote the key), or decided now: the key first, so a key that
      // changed meanwhile fails the batch before anything was held on its decisions.
      const replayed = state?.sequenced !== undefined && compareSequence(last.sequence, state.sequenced) <= 0;
      if (!replayed && !(await this.sequence(queue, key, state, opened, decision, last, positions)))
        // A receiver took the key meanwhile (or, never expected, another admission of the shard
        // moved `sequenced`): the batch is offered again and decided from the key as it is then.
        throw new Error(`key ${key} of ${queue} changed while its records were sequenced`);
      const held = entries.filter((_, i) => decision.steps[i] === 'hold');
      if (!held.length) return;
      // The hold items, then the key's token: a receiver empties a hold area only with the token
      // it read, so nothing held here is left behind.
      const token = holdingToken();
      await this.deps.holds.put(
        queue,
        held.map((e) => {
          const position = positions.get(e.sequence);
          if (position === undefined) throw new Error(`no position for held entry ${e.sequence}`);
          return { key, shard, sequence: e.sequence, position, envelope: e.envelope };
        }),
        ttl,
        token,
      );
      await this.deps.keys.setHolding(queue, key, token);
    });
  }

  private sequence(
    queue: string,
    key: string,
    state: KeyState | undefined,
    opened: boolean,
    decision: KeyDecision,
    last: SequencedEntry,
    positions: Positions,
  ): Promise<boolean> {
    const position = decision.head && positions.get(decision.head.sequence);
    return this.deps.keys.sequence(queue, key, {
      ...(state?.sequenced !== undefined ? { prev: state.sequenced } : {}),
      sequenced: last.sequence,
      ...(decision.head && position !== undefined
        ? { head: { message_id: decision.head.message_id, sequence: decision.head.sequence, position } }
        : {}),
      ...(decision.delayed !== undefined ? { delayed: decision.delayed } : {}),
      ...(decision.busyWith !== undefined ? { busyWith: decision.busyWith } : {}),
      ...(state?.busy_with !== undefined ? { holder: state.busy_with } : {}),
      unpark: decision.unpark,
      opened,
    });
  }
}

/**
 * Where a key's head is, read consistently: its entry's status, or acked when its range is gone
 * below the shard's commit point (finished, and past the retention). Undefined while its range is
 * not written yet (its admission is under way).
 */
export async function headStatus(
  ranges: RangeStore,
  queue: string,
  shard: string,
  head: KeyHead,
): Promise<EntryStatus | undefined> {
  const at = await ranges.entryAt(queue, shard, head);
  if (at) return entryStatus(at.range, at.index, Date.now());
  const commit = await ranges.commitHint(queue, shard);
  return commit !== undefined && compareSequence(commit, head.sequence) > 0 ? 'acked' : undefined;
}

function view(state: KeyState | undefined, status: HeadStatus | undefined): SequencerKeyView {
  const head = state?.head;
  return {
    ...(state?.busy_with !== undefined ? { busy_with: state.busy_with } : {}),
    ...(state?.parked_at !== undefined ? { parked_at: state.parked_at } : {}),
    ...(state?.dead_message_id !== undefined ? { dead_message_id: state.dead_message_id } : {}),
    ...(state?.holding !== undefined ? { holding: state.holding } : {}),
    ...(state?.sequenced !== undefined ? { sequenced: state.sequenced } : {}),
    ...(state?.delayed !== undefined ? { delayed: state.delayed } : {}),
    ...(head ? { head: { message_id: head.message_id, sequence: head.sequence } } : {}),
    headDone: head === undefined || status === 'acked' || status === 'failed' || status === 'finished',
    headAcked: status === 'acked',
  };
}
