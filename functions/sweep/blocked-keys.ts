import { mapLimit } from '../core/async.js';
import type { QueueConfig } from '../core/config.js';
import { writeToken } from '../core/ids.js';
import { keyedStep, keyTag } from '../core/ordering.js';
import { admittedTotal, entryStatus, gapCap, type Range } from '../core/ranges.js';
import { retentionTtls } from '../core/retention.js';
import type { KeyBlocks } from '../store/key-blocks.js';
import type { HeldMessage, KeyHolds } from '../store/key-holds.js';
import type { KeyState, KeyStates } from '../store/key-states.js';
import type { RangeStore } from '../store/ranges.js';
import type { SegmentStore } from '../store/segments.js';

/**
 * The sweep's part in an ordered pull queue's blocked keys, per shard (store/key-blocks.ts):
 * - a parked key's messages that wait in the ranges, and a key's held by a message outside the
 *   ranges once they sit past the gap cap (in a closed shard all of them: nothing more is
 *   admitted there, and its children's messages of the key wait for them), move into the key's
 *   hold area (a copy of each envelope: a parked key can outlive the log), finished in their
 *   ranges so the commit point passes them; they are delivered from there once the key is free
 *   again (held-delivery.ts);
 * - a block whose key is free again (skipped, redriven and acked, its hold area emptied) is
 *   taken off, so receivers stop reading its state.
 */

export interface BlockedKeysDeps {
  blocks: KeyBlocks;
  keys: KeyStates;
  holds: KeyHolds;
  ranges: RangeStore;
  segments: SegmentStore;
}

export class BlockedKeys {
  constructor(private readonly deps: BlockedKeysDeps) {}

  /** Answers how many messages moved into hold areas. */
  async sweep(
    queue: string,
    config: QueueConfig,
    shard: string,
    open: readonly Range[],
    now: number,
    closed = false,
  ): Promise<number> {
    const blocked = await this.deps.blocks.read(queue, shard);
    if (!blocked.size) return 0;
    const states = await this.deps.keys.getMany(queue, [...blocked.keys()]);
    await mapLimit([...blocked], 8, async ([key, token]) => {
      if (isFree(states.get(key))) await this.deps.blocks.unblock(queue, shard, key, token);
    });
    const limit = closed ? Number.POSITIVE_INFINITY : admittedTotal(open.at(-1)) - gapCap(config);
    const moving = new Map<string, KeyState | undefined>();
    for (const key of blocked.keys()) if (!isFree(states.get(key))) moving.set(key, states.get(key));
    const tags = new Set([...moving.keys()].map(keyTag));
    // Moving keys' entries that wait in the ranges, oldest first (their keys are in their
    // envelopes): free, produced with a delay, or failed and waiting for their next attempt. Per
    // tag a prefix: an entry leased (or its lease run out) stops its tag there, so nothing of a
    // key reaches its hold area ahead of an earlier message still in the ranges.
    const stopped = new Set<string>();
    const candidates = open.flatMap((range) =>
      Array.from({ length: range.count }, (_, index) => index).flatMap((index) => {
        const tag = range.keys?.[index] ?? '';
        if (!tags.has(tag) || stopped.has(tag)) return [];
        const status = entryStatus(range, index, now);
        if (status === 'acked' || status === 'failed') return [];
        if (status === 'free' || status === 'retrying') return [{ range, index }];
        stopped.add(tag);
        return [];
      }),
    );
    if (!candidates.length) return 0;
    const entries = await mapLimit(candidates, 16, async (c) => ({
      ...c,
      entry: await this.deps.segments.entryAt(queue, c.range, c.index),
    }));
    const byKey = new Map<string, Omit<HeldMessage, 'deliveries'>[]>();
    const where = new Map<string, { range: Range; index: number }>();
    for (const { range, index, entry } of entries) {
      const key = entry?.envelope.key;
      if (!entry || key === undefined || !moving.has(key)) continue;
      const state = moving.get(key);
      // The message holding the key goes from its range; a key held, not parked, moves only
      // what sits past the gap cap (its holder may be back soon).
      if (state?.busy_with === entry.envelope.message_id) continue;
      if (state?.parked_at === undefined && range.base + index >= limit) continue;
      // A failed one keeps its attempt: its next delivery, from the hold area, is that attempt.
      const attempt = range.retrying.get(index)?.attempt;
      const held = {
        key,
        shard,
        sequence: entry.sequence,
        position: range.base + index,
        envelope: attempt === undefined ? entry.envelope : { ...entry.envelope, attempt },
      };
      byKey.set(key, [...(byKey.get(key) ?? []), held]);
      where.set(entry.sequence, { range, index });
    }
    const { deadTtl } = retentionTtls(config, now);
    const moved = await mapLimit([...byKey], 8, async ([key, held]) => {
      // The hold items, then the key's token, then the ranges: a message is somewhere at every step.
      const token = writeToken(now);
      await this.deps.holds.put(queue, held, deadTtl, token);
      await this.deps.keys.setHolding(queue, key, token);
      const perRange = new Map<string, { range: Range; indexes: number[] }>();
      for (const h of held) {
        const at = where.get(h.sequence) as { range: Range; index: number };
        const group = perRange.get(at.range.start) ?? { range: at.range, indexes: [] };
        group.indexes.push(at.index);
        perRange.set(at.range.start, group);
      }
      let n = 0;
      // Oldest range first: a range that refuses (an entry leased meanwhile) stops the key's move,
      // so what is held stays a prefix of what waited.
      for (const { range, indexes } of perRange.values()) {
        if (!(await this.deps.ranges.hold(queue, range, indexes))) break;
        n += indexes.length;
      }
      return n;
    });
    return moved.reduce((a, b) => a + b, 0);
  }
}

/** Free: not parked, held by nothing, nothing in its hold area. */
export function isFree(state: KeyState | undefined): boolean {
  return keyedStep(state, '') === 'deliver' && state?.lease_expires_at === undefined;
}
