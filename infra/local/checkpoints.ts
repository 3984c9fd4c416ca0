import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '../../functions/core/async.js';

/**
 * Where one event source mapping has got to in its stream: the sequence number of the last
 * record handled, per shard, and which closed shards it has finished. Lambda keeps this for a
 * mapping on AWS; locally it is one JSON file per mapping, replaced atomically (tmp file +
 * rename) so a crash leaves the old or the new file, never half of one.
 */

interface CheckpointFile {
  streamName: string;
  /** When the mapping was first started: where a LATEST mapping begins, on every start. */
  createdAt: number;
  shards: Record<string, string>;
  /**
   * Closed shards read to their end with every record handled: they are not read again, and
   * their child shards need not wait for them. Absent from files written before shards could end.
   */
  ended?: string[];
}

export class CheckpointStore {
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    private readonly path: string,
    private readonly file: CheckpointFile,
  ) {}

  /** Reads the mapping's file, or creates it: the first start is the mapping's creation. */
  static async open(dir: string, functionName: string, streamName: string): Promise<CheckpointStore> {
    await mkdir(dir, { recursive: true });
    const path = checkpointPath(dir, functionName);
    const existing = await readCheckpointFile(path);
    // A mapping pointed at another stream is a new mapping, as on AWS: its positions do not carry over.
    if (existing?.streamName === streamName) return new CheckpointStore(path, existing);
    // Records carry their arrival to the millisecond: one put in this very millisecond, before
    // the mapping existed, would count as after it. A millisecond later, none can.
    await sleep(1);
    const store = new CheckpointStore(path, { streamName, createdAt: Date.now(), shards: {} });
    await store.write();
    return store;
  }

  get createdAt(): number {
    return this.file.createdAt;
  }

  get(shardId: string): string | undefined {
    return this.file.shards[shardId];
  }

  isEnded(shardId: string): boolean {
    return this.file.ended?.includes(shardId) ?? false;
  }

  /** Resolves once it is on disk. */
  markEnded(shardId: string): Promise<void> {
    if (!this.isEnded(shardId)) this.file.ended = [...(this.file.ended ?? []), shardId];
    return this.write();
  }

  /** Resolves once the position is on disk. Writes are chained so an older one never lands after a newer one. */
  set(shardId: string, sequenceNumber: string): Promise<void> {
    this.file.shards[shardId] = sequenceNumber;
    return this.write();
  }

  /** Deletes the file, once pending writes are done: the mapping is gone. */
  async remove(): Promise<void> {
    await this.writing.catch(() => undefined);
    await rm(this.path, { force: true });
  }

  /** Deletes a mapping's file that no store has open (one a stopped runtime left). */
  static async discard(dir: string, functionName: string): Promise<void> {
    await rm(checkpointPath(dir, functionName), { force: true });
  }

  private write(): Promise<void> {
    const next = this.writing
      .catch(() => undefined)
      .then(async () => {
        const tmp = `${this.path}.tmp`;
        await writeFile(tmp, `${JSON.stringify(this.file, null, 2)}\n`);
        await rename(tmp, this.path);
      });
    this.writing = next;
    return next;
  }
}

function checkpointPath(dir: string, functionName: string): string {
  return join(dir, `${encodeURIComponent(functionName)}.json`);
}

async function readCheckpointFile(path: string): Promise<CheckpointFile | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const file = JSON.parse(text) as Partial<CheckpointFile>;
  if (
    typeof file.streamName !== 'string' ||
    typeof file.createdAt !== 'number' ||
    !file.shards ||
    (file.ended !== undefined && !Array.isArray(file.ended))
  ) {
    throw new Error(`${path} is not a checkpoint file`);
  }
  return file as CheckpointFile;
}
