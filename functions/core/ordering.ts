import { compareSequence } from './ranges.js';

/**
 * Per-key ordering (docs/contract.md, "Ordering"): at most one message of a key in flight, messages
 * of a key in the order they were accepted. Pure rules over what the store reports.
 */

export interface KeyView {
  /** The message that holds the key (leased, delayed or coming back through the log). */
  busy_with?: string;
  parked_at?: number;
}

/** What a Lambda consumer on the lease layer does with a message of a key when it reaches it. */
export type KeyedStep = 'deliver' | 'hold' | 'redriven';

export interface PushKeyView extends KeyView {
  dead_message_id?: string;
  /** Messages of the key wait in its hold area: they go before any newer one (a token: store/key-states.ts). */
  holding?: number;
}

/**
 * A key holds back only its own later messages (docs/ordered-queues.md): a parked key everything but its
 * redriven dead message (which then goes first), a key busy with a retry everything but that
 * retry, a key with held messages every newer one (they join the hold area behind them).
 */
export function keyedStep(state: PushKeyView | undefined, messageId: string): KeyedStep {
  if (state?.parked_at !== undefined) return state.dead_message_id === messageId ? 'redriven' : 'hold';
  if (state?.busy_with !== undefined) return state.busy_with === messageId ? 'deliver' : 'hold';
  return state?.holding ? 'hold' : 'deliver';
}

/**
 * An ordered pull queue's admission (docs/ordered-queues.md): an admitter reading a shard in
 * log order (dispatch or produce's fast path; one conditional write per key keeps each record
 * decided once) decides for each new record of a key whether it becomes the key's **head** (the one
 * entry of the key in the ranges, leasable by any receiver with no key write), waits in the delay
 * store holding its key (`delay`), or goes to the key's hold area (`hold`), whence receivers take
 * it in log order once the key is free. A key has at most one unfinished head, so the ranges
 * never hold a blocked entry: the commit point passes every key that is busy or parked.
 */
export type SequenceStep = 'head' | 'delay' | 'hold';

export interface SequencedRecord {
  message_id: string;
  sequence: string;
  /** 1 for what a producer sent; more for a retry or a redriven dead letter. */
  entry: number;
  /** Due now (false: produced with a delay not yet over). */
  due: boolean;
}

export interface SequencerKeyView extends PushKeyView {
  /** The key's last head in the ranges. */
  head?: { message_id: string; sequence: string };
  /** Its head is no longer in flight in the ranges (acked or failed), or it has none. */
  headDone: boolean;
  headAcked: boolean;
  /** The last record admission decided for: a retried admission replays what it decided up to it. */
  sequenced?: string;
  /** The last record admission put in the delay store (it holds the key until it comes back). */
  delayed?: string;
}

export interface KeyDecision {
  steps: SequenceStep[];
  /** The new head, if one of the records became it. */
  head?: SequencedRecord;
  /** The message now holding the key (a head that is a retry or redriven, or a delayed one); null: released. */
  busyWith?: string | null;
  /** The record that went to the delay store, if one did. */
  delayed?: string;
  unpark: boolean;
  holding: boolean;
}

/** The message holding the key, unless it is the head and was acked (released lazily: acks write no key). */
function liveHolder(k: SequencerKeyView): string | undefined {
  return k.head?.message_id === k.busy_with && k.headAcked ? undefined : k.busy_with;
}

/** Whether the key lets its next new message become its head. */
export function keyOpen(k: SequencerKeyView): boolean {
  return k.parked_at === undefined && !k.holding && k.headDone && liveHolder(k) === undefined;
}

/**
 * The steps for a key's records of one admitted batch, in log order. A retry (entry > 1) is its
 * key's head whatever came since (only a key's head is ever delivered, so only it can fail); a
 * redriven dead letter unparks its key and goes first; a new message is the head of an open key
 * and held otherwise. Records at or before `sequenced` were decided by an earlier try of this
 * admission, and the key says what was decided.
 */
export function sequenceKey(k: SequencerKeyView, records: readonly SequencedRecord[]): KeyDecision {
  const d: KeyDecision = { steps: [], unpark: false, holding: false };
  let open = keyOpen(k);
  let holder = liveHolder(k);
  let parked = k.parked_at !== undefined;
  // A holder released lazily goes with this write if the key is open (not while receivers may
  // take it for a held message).
  if (open && k.busy_with !== undefined) d.busyWith = null;
  for (const r of records) {
    if (k.sequenced !== undefined && compareSequence(r.sequence, k.sequenced) <= 0) {
      // Named exactly: the key's holder may be this message for another reason by now (taken from
      // the hold area), and a delay decided again would bring it back through the log.
      d.steps.push(k.head?.sequence === r.sequence ? 'head' : k.delayed === r.sequence ? 'delay' : 'hold');
      // Whatever it was, the key is not open behind it (its head's range may not be written yet).
      open = false;
      continue;
    }
    const redriven = parked && k.dead_message_id === r.message_id;
    const retry = r.entry > 1 && !parked && (holder === undefined || holder === r.message_id);
    if (redriven || retry || (open && r.entry === 1)) {
      const step = r.due || r.entry > 1 ? 'head' : 'delay';
      d.steps.push(step);
      if (step === 'head') d.head = r;
      else d.delayed = r.sequence;
      // A new head of an open key holds it through its lease alone; the others hold it by name.
      if (redriven || retry || step === 'delay') {
        d.busyWith = r.message_id;
        holder = r.message_id;
      }
      d.unpark ||= redriven;
      parked = false;
      open = false;
    } else {
      d.steps.push('hold');
      d.holding = true;
      open = false;
    }
  }
  return d;
}
