/**
 * Per-key ordering (DESIGN §1 "Ordering"): at most one message of a key in flight, messages
 * of a key in the order they were accepted. Pure rules over what the store reports.
 */

export interface OrderedCandidate {
  message_id: string;
  key?: string;
}

export interface KeyView {
  /** The message that holds the key (leased, delayed or coming back through the log). */
  busy_with?: string;
  parked_at?: number;
}

/** What became of a key's holder, from its state. */
export type HolderFate = 'live' | 'finished' | 'dead';

export function holderFate(state: string | undefined): HolderFate {
  if (state === undefined || state === 'acked' || state === 'purged') return 'finished';
  return state === 'dead' ? 'dead' : 'live';
}

/**
 * From ready candidates in log order, those that may be leased now: a key's holder itself,
 * or the first ready message of a free key. A parked key gives none.
 */
export function pickLeasable<T extends OrderedCandidate>(
  candidates: readonly T[],
  keys: ReadonlyMap<string, KeyView>,
): T[] {
  const decided = new Set<string>();
  const picked: T[] = [];
  for (const c of candidates) {
    if (c.key === undefined) {
      picked.push(c);
      continue;
    }
    if (decided.has(c.key)) continue;
    const state = keys.get(c.key);
    if (state?.parked_at !== undefined) {
      decided.add(c.key);
    } else if (state?.busy_with !== undefined) {
      if (state.busy_with === c.message_id) {
        picked.push(c);
        decided.add(c.key);
      }
    } else {
      picked.push(c);
      decided.add(c.key);
    }
  }
  return picked;
}

/** Keys whose holder is not among the candidates: its fate decides whether the key is stuck. */
export function holdersToCheck(
  candidates: readonly OrderedCandidate[],
  keys: ReadonlyMap<string, KeyView>,
): string[] {
  const ids = new Set(candidates.map((c) => c.message_id));
  const holders = new Set<string>();
  for (const c of candidates) {
    const holder = c.key === undefined ? undefined : keys.get(c.key)?.busy_with;
    if (holder !== undefined && !ids.has(holder)) holders.add(holder);
  }
  return [...holders];
}

/**
 * Whether a message's predecessor lets it go: gone or acked, or dead (a parked key gives no
 * candidates, so a dead predecessor here was skipped). The chain, not the index, is what
 * keeps order: an index can show a later message before an earlier one.
 */
export function predecessorAllows(prevState: string | undefined): boolean {
  return holderFate(prevState) !== 'live';
}

/** What a Lambda consumer on the lease layer does with a message of a key when it reaches it. */
export type KeyedStep = 'deliver' | 'hold' | 'redriven';

export interface PushKeyView extends KeyView {
  dead_message_id?: string;
  /** Messages of the key wait in its hold area: they go before any newer one. */
  holding?: boolean;
}

/**
 * A key holds back only its own later messages (DESIGN §2a): a parked key everything but its
 * redriven dead message (which then goes first), a key busy with a retry everything but that
 * retry, a key with held messages every newer one (they join the hold area behind them).
 */
export function keyedStep(state: PushKeyView | undefined, messageId: string): KeyedStep {
  if (state?.parked_at !== undefined) return state.dead_message_id === messageId ? 'redriven' : 'hold';
  if (state?.busy_with !== undefined) return state.busy_with === messageId ? 'deliver' : 'hold';
  return state?.holding ? 'hold' : 'deliver';
}
