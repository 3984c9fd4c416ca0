import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Lease, Range } from '../../functions/core/ranges.js';
import {
  type AncestorView,
  descendants,
  leastProgress,
  lineageGate,
  mayFinish,
  type ShardLink,
  type ShardProgress,
  shardState,
  unfinishedAncestors,
} from '../../functions/core/shard-lineage.js';
import { aRange } from '../helpers/ranges.js';

/**
 * The lineage rules against a model of a resharded ordered queue: random produces, admissions,
 * splits, merges, deliveries, acks and nacks (leases held across every change). A shard delivers
 * per key its first unfinished admitted entry when free, and a child only what its lineage gate
 * lets through; no key may ever have a later message delivered before an earlier one is acked,
 * nor two in flight, and once everything is admitted every message is delivered.
 */

const NOW = 1_000_000;
const SPACE = 64;
const KEYS = ['a', 'b', 'c', 'd', 'e', 'f'];
const hashOf = (key: string) => (KEYS.indexOf(key) * 11 + 3) % SPACE;

interface Entry {
  key: string;
  seq: number;
  state: 'free' | 'leased' | 'acked';
}

interface ModelShard {
  id: string;
  lo: number;
  hi: number;
  parents: string[];
  closed: boolean;
  entries: Entry[];
  /** Entries admitted into ranges: a look sees only these. */
  admitted: number;
}

class Model {
  readonly shards: ModelShard[] = [];
  private readonly nextSeq = new Map<string, number>();
  readonly violations: string[] = [];

  constructor(initial: number) {
    for (let i = 0; i < initial; i++)
      this.add([], Math.floor((i * SPACE) / initial), Math.floor(((i + 1) * SPACE) / initial));
  }

  private add(parents: string[], lo: number, hi: number): void {
    const id = `shard-${String(this.shards.length).padStart(3, '0')}`;
    this.shards.push({ id, lo, hi, parents, closed: false, entries: [], admitted: 0 });
  }

  open(): ModelShard[] {
    return this.shards.filter((s) => !s.closed).sort((a, b) => a.lo - b.lo);
  }

  produce(key: string): void {
    const seq = this.nextSeq.get(key) ?? 0;
    this.nextSeq.set(key, seq + 1);
    const shard = this.open().find((s) => s.lo <= hashOf(key) && hashOf(key) < s.hi) as ModelShard;
    shard.entries.push({ key, seq, state: 'free' });
  }

  admit(pick: number): void {
    const shard = this.shards[pick % this.shards.length] as ModelShard;
    shard.admitted = Math.min(shard.entries.length, shard.admitted + 1 + (pick % 3));
  }

  split(pick: number): void {
    const open = this.open();
    const shard = open[pick % open.length] as ModelShard;
    if (shard.hi - shard.lo < 2) return;
    const mid = Math.floor((shard.lo + shard.hi) / 2);
    shard.closed = true;
    this.add([shard.id], shard.lo, mid);
    this.add([shard.id], mid, shard.hi);
  }

  merge(pick: number): void {
    const open = this.open();
    if (open.length < 2) return;
    const i = pick % (open.length - 1);
    const [left, right] = [open[i] as ModelShard, open[i + 1] as ModelShard];
    left.closed = right.closed = true;
    this.add([left.id, right.id], left.lo, right.hi);
  }

  /** The shard's entries as one range a look reads (up to what is admitted). */
  private range(shard: ModelShard): Range {
    const admitted = shard.entries.slice(0, shard.admitted);
    const lease: Lease = { expiresAt: NOW + 60_000, deliveredAt: NOW };
    return aRange('1', {
      shard: shard.id,
      count: admitted.length,
      keys: admitted.map((e) => e.key),
      acked: new Set(admitted.flatMap((e, i) => (e.state === 'acked' ? [i] : []))),
      leases: new Map(admitted.flatMap((e, i) => (e.state === 'leased' ? [[i, lease] as const] : []))),
    });
  }

  /** Progress as the sweep would mark it, parents first. */
  progress(): Map<string, ShardProgress> {
    const progress = new Map<string, ShardProgress>();
    for (const shard of this.shards) {
      if (!shard.closed || shard.admitted < shard.entries.length) continue;
      progress.set(shard.id, 'ended');
      const link = this.links().get(shard.id) as ShardLink;
      if (mayFinish(link, progress, { ranges: [this.range(shard)], blocked: new Map() }, NOW))
        progress.set(shard.id, 'finished');
    }
    return progress;
  }

  links(): Map<string, ShardLink> {
    return new Map(this.shards.map((s) => [s.id, { id: s.id, parents: s.parents, closed: s.closed }]));
  }

  /** One look at a shard: per key its first unfinished admitted entry, when free and let through. */
  deliver(pick: number): number {
    const shard = this.shards[pick % this.shards.length] as ModelShard;
    const progress = this.progress();
    const ancestors = unfinishedAncestors(this.links(), shard.id, progress);
    const views: AncestorView[] = ancestors.map((id) => {
      const a = this.shards.find((s) => s.id === id) as ModelShard;
      return progress.get(id) === 'ended'
        ? { ended: true, window: { ranges: [this.range(a)], blocked: new Map() } }
        : { ended: false };
    });
    const gate = lineageGate(views, NOW);
    if (gate === 'shut') return 0;
    const stopped = new Set<string>();
    let delivered = 0;
    for (const entry of shard.entries.slice(0, shard.admitted)) {
      if (entry.state === 'acked' || stopped.has(entry.key)) continue;
      stopped.add(entry.key);
      if (entry.state !== 'free' || gate.waits.has(entry.key)) continue;
      this.check(entry);
      entry.state = 'leased';
      delivered++;
    }
    return delivered;
  }

  private check(entry: Entry): void {
    for (const other of this.shards.flatMap((s) => s.entries))
      if (other.key === entry.key && other !== entry) {
        if (other.seq < entry.seq && other.state !== 'acked')
          this.violations.push(`${entry.key}#${entry.seq} before #${other.seq} was acked`);
        if (other.state === 'leased') this.violations.push(`${entry.key}#${entry.seq} beside #${other.seq}`);
      }
  }

  settle(pick: number, ack: boolean): void {
    const leased = this.shards.flatMap((s) => s.entries).filter((e) => e.state === 'leased');
    const entry = leased[pick % Math.max(1, leased.length)];
    if (entry) entry.state = ack ? 'acked' : 'free';
  }

  unacked(): number {
    return this.shards.flatMap((s) => s.entries).filter((e) => e.state !== 'acked').length;
  }
}

const op = fc.oneof(
  fc.record({ kind: fc.constant('produce' as const), key: fc.constantFrom(...KEYS) }),
  fc.record({ kind: fc.constantFrom('admit', 'split', 'merge', 'deliver', 'ack', 'nack'), pick: fc.nat(50) }),
);

describe('shard lineage rules', () => {
  it('keep every key in order with at most one in flight, and let everything through in the end', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3 }), fc.array(op, { maxLength: 120 }), (initial, ops) => {
        const model = new Model(initial);
        for (const o of ops) {
          if (o.kind === 'produce') model.produce(o.key);
          else if (o.kind === 'admit') model.admit(o.pick);
          else if (o.kind === 'split') model.split(o.pick);
          else if (o.kind === 'merge') model.merge(o.pick);
          else if (o.kind === 'deliver') model.deliver(o.pick);
          else model.settle(o.pick, o.kind === 'ack');
        }
        // Everything admitted, every lease acked, then looks at every shard until all is acked.
        for (const shard of model.shards) shard.admitted = shard.entries.length;
        for (let round = 0; model.unacked() > 0 && round < 200; round++) {
          for (let i = 0; i < model.shards.length; i++) model.deliver(i);
          for (let n = model.unacked(); n > 0; n--) model.settle(0, true);
        }
        expect(model.violations).toEqual([]);
        expect(model.unacked()).toBe(0);
      }),
      { numRuns: 400 },
    );
  });

  it('follow a chain of lineage past finished shards, and parents no longer listed', () => {
    const links = new Map<string, ShardLink>([
      ['a', { id: 'a', parents: [], closed: true }],
      ['b', { id: 'b', parents: ['a'], closed: true }],
      ['c', { id: 'c', parents: ['a'], closed: true }],
      ['d', { id: 'd', parents: ['b', 'c'], closed: false }],
      ['e', { id: 'e', parents: ['gone'], closed: false }],
    ]);
    expect(unfinishedAncestors(links, 'd', new Map())).toEqual(['b', 'c', 'a']);
    expect(unfinishedAncestors(links, 'd', new Map([['b', 'finished']]))).toEqual(['c', 'a']);
    expect(unfinishedAncestors(links, 'e', new Map())).toEqual(['gone']);
    expect(unfinishedAncestors(links, 'e', new Map([['gone', 'finished']]))).toEqual([]);
    expect(shardState(links.get('d') as ShardLink, undefined)).toBe('open');
    expect(shardState(links.get('b') as ShardLink, 'ended')).toBe('draining');
    expect(shardState(links.get('b') as ShardLink, 'finished')).toBe('finished');
  });

  it('find where a closed shard went on: its children, theirs, and a merge it took part in', () => {
    const links = new Map<string, ShardLink>([
      ['a', { id: 'a', parents: [], closed: true }],
      ['z', { id: 'z', parents: [], closed: true }],
      ['b', { id: 'b', parents: ['a'], closed: false }],
      ['c', { id: 'c', parents: ['a'], closed: true }],
      ['d', { id: 'd', parents: ['c', 'z'], closed: true }],
      ['e', { id: 'e', parents: ['d'], closed: false }],
      ['f', { id: 'f', parents: ['d'], closed: false }],
    ]);
    expect(descendants(links, 'a')).toEqual(['b', 'c', 'd', 'e', 'f']);
    expect(descendants(links, 'z')).toEqual(['d', 'e', 'f']);
    expect(descendants(links, 'b')).toEqual([]);
    expect(descendants(links, 'unlisted')).toEqual([]);
  });

  it('shut a child while an ancestor is not ended or too long to read', () => {
    expect(lineageGate([{ ended: false }], NOW)).toBe('shut');
    expect(lineageGate([{ ended: true }], NOW)).toBe('shut');
    const gate = lineageGate(
      [
        {
          ended: true,
          window: {
            ranges: [aRange('1', { count: 2, keys: ['x', 'y'], acked: new Set([0]) })],
            blocked: new Map([['z', 7]]),
          },
        },
      ],
      NOW,
    );
    expect(gate).toEqual({ waits: new Set(['y']), blocked: new Map([['z', 7]]) });
  });

  it('give a shard of several readers the least progress of any of them', () => {
    const one = new Map<string, ShardProgress>([
      ['a', 'finished'],
      ['b', 'finished'],
      ['c', 'ended'],
    ]);
    const two = new Map<string, ShardProgress>([
      ['a', 'finished'],
      ['b', 'ended'],
      ['c', 'finished'],
      ['d', 'finished'],
    ]);
    expect(leastProgress([one, two])).toEqual(
      new Map([
        ['a', 'finished'],
        ['b', 'ended'],
        ['c', 'ended'],
      ]),
    );
    expect(leastProgress([two])).toEqual(two);
  });

  it('finish a shard only once it is ended, empty, unblocked and its parents are finished', () => {
    const link: ShardLink = { id: 'b', parents: ['a'], closed: true };
    const empty = {
      ranges: [aRange('1', { count: 1, keys: ['x'], acked: new Set([0]) })],
      blocked: new Map(),
    };
    const both = new Map<string, ShardProgress>([
      ['a', 'finished'],
      ['b', 'ended'],
    ]);
    expect(mayFinish(link, both, empty, NOW)).toBe(true);
    expect(
      mayFinish(
        link,
        new Map([
          ['a', 'ended'],
          ['b', 'ended'],
        ]),
        empty,
        NOW,
      ),
    ).toBe(false);
    expect(mayFinish(link, new Map([['a', 'finished']]), empty, NOW)).toBe(false);
    expect(mayFinish(link, both, { ...empty, blocked: new Map([['x', 1]]) }, NOW)).toBe(false);
    expect(
      mayFinish(link, both, { ranges: [aRange('1', { count: 1, keys: ['x'] })], blocked: new Map() }, NOW),
    ).toBe(false);
  });
});
