import { type ShardProgress, unfinishedAncestors } from '../core/shard-lineage.js';
import type { ShardDirectory } from '../log/stream.js';
import type { ShardMark, ShardMarks } from '../store/shard-marks.js';

/**
 * A queue's unfinished ancestors of a shard, for the lineage gate of its looks
 * (core/shard-lineage.ts): the stream's listing and the queue's shard marks, the marks read at
 * most four times a second per instance. A shard with no parent costs nothing; nor, once every
 * ancestor of it is finished, does it again (a finished mark is for good).
 */
export interface QueueLineageDeps {
  directory: Pick<ShardDirectory, 'lineage' | 'learn'>;
  marks: Pick<ShardMarks, 'all'>;
}

/** Marks are read only while a child has an unfinished ancestor: a new mark releases its keys. */
const MARKS_REUSE_MS = 250;

export class QueueLineage {
  private readonly read = new Map<string, { at: number; marks: Promise<Map<string, ShardMark>> }>();
  /** Per queue and shard: every ancestor finished. */
  private readonly clear = new Set<string>();

  constructor(private readonly deps: QueueLineageDeps) {}

  /**
   * The shard's unfinished ancestors, each with whether it is ended; undefined when the stream
   * does not list the shard even when listed again (a caller must then hold all of it back: a
   * shard this instance has not listed yet has parents it does not know).
   */
  async ancestors(
    queue: string,
    stream: string,
    shard: string,
    now: number,
  ): Promise<{ shard: string; ended: boolean }[] | undefined> {
    const at = `${queue}\u0000${shard}`;
    if (this.clear.has(at)) return [];
    let links = await this.deps.directory.lineage(stream, now);
    if (!links.has(shard)) {
      // Admission names the shards its records came from: a child newer than this listing.
      await this.deps.directory.learn(stream, shard);
      links = await this.deps.directory.lineage(stream, now);
    }
    const link = links.get(shard);
    if (!link) return undefined;
    if (!link.parents.length) return [];
    const progress = await this.progress(queue, now);
    const found = unfinishedAncestors(links, shard, progress).map((id) => ({
      shard: id,
      ended: progress.get(id) === 'ended',
    }));
    if (!found.length) this.clear.add(at);
    return found;
  }

  /** The queue's shard marks' progress. */
  async progress(queue: string, now: number): Promise<Map<string, ShardProgress>> {
    const hit = this.read.get(queue);
    const marks = hit && now - hit.at < MARKS_REUSE_MS ? hit.marks : this.deps.marks.all(queue);
    if (marks !== hit?.marks) {
      this.read.set(queue, { at: now, marks });
      marks.catch(() => this.read.delete(queue));
    }
    return new Map([...(await marks)].flatMap(([s, m]) => (m.progress ? [[s, m.progress] as const] : [])));
  }
}
