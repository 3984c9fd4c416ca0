import { randomBytes } from 'node:crypto';
import { type DocumentClient, GetCommand, PutCommand } from '../aws/dynamodb.js';
import type { S3Objects } from '../aws/s3-objects.js';
import type { Envelope } from '../core/envelope.js';
import type { Range, SegmentRef } from '../core/ranges.js';
import { segmentKey, segmentObjectKey, TTL_ATTRIBUTE } from './keys.js';

/**
 * Segments: the envelopes of one admitted batch, written once and never rewritten, so a lease
 * or an ack never pays for payload bytes. Where by cost (us-east-1 on demand): a DynamoDB write
 * is $0.625 per million units of 1 KB, an S3 PUT $5 per million whatever its size, so up to
 * 8 KB a segment is cheaper as an item and above it as an object. S3 reads its own writes;
 * items are read consistently, so a range never points at a segment a reader cannot see.
 * Immutable, so each function instance keeps the ones it read (bounded by bytes).
 */

export interface SegmentEntry {
  sequence: string;
  envelope: Envelope;
}

export const SEGMENT_ITEM_MAX_BYTES = 8 * 1024;
const CACHE_BYTES = 64 * 1024 * 1024;

export class SegmentStore {
  private readonly cache = new Map<string, { entries: SegmentEntry[]; bytes: number }>();
  private cached = 0;

  constructor(
    private readonly doc: DocumentClient,
    private readonly s3: S3Objects,
    private readonly table: string,
    private readonly bucket: string,
  ) {}

  /** Writes a segment; answers where it went. */
  async put(
    queue: string,
    shard: string,
    entries: readonly SegmentEntry[],
    ttl: number,
  ): Promise<Pick<SegmentRef, 'id' | 'store'>> {
    // Its own id: two admitters of one run of the log (dispatch, produce's fast path) may each
    // write a segment starting at the same entry, and the range that won points at its writer's.
    const id = `${(entries[0] as SegmentEntry).sequence}.${randomBytes(4).toString('hex')}`;
    const body = JSON.stringify(entries);
    const bytes = Buffer.byteLength(body);
    const store = bytes <= SEGMENT_ITEM_MAX_BYTES ? 'ddb' : 's3';
    if (store === 'ddb') {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { ...segmentKey(queue, shard, id), d: body, [TTL_ATTRIBUTE]: ttl },
        }),
      );
    } else {
      await this.s3.put(this.bucket, segmentObjectKey(queue, shard, id), body, 'application/json');
    }
    this.remember(cacheKey(queue, shard, id), [...entries], bytes);
    return { id, store };
  }

  /** The entries of a segment; undefined only if it is gone (past the retention). */
  async get(
    queue: string,
    shard: string,
    ref: Pick<SegmentRef, 'id' | 'store'>,
  ): Promise<SegmentEntry[] | undefined> {
    const key = cacheKey(queue, shard, ref.id);
    const hit = this.cache.get(key);
    if (hit) {
      // Most recently used last: Map keeps insertion order.
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit.entries;
    }
    let body: string | undefined;
    if (ref.store === 'ddb') {
      const out = await this.doc.send(
        new GetCommand({
          TableName: this.table,
          Key: segmentKey(queue, shard, ref.id),
          ConsistentRead: true,
        }),
      );
      body = typeof out.Item?.d === 'string' ? out.Item.d : undefined;
    } else {
      body = (await this.s3.get(this.bucket, segmentObjectKey(queue, shard, ref.id)))?.toString('utf8');
    }
    if (body === undefined) return undefined;
    const entries = JSON.parse(body) as SegmentEntry[];
    this.remember(key, entries, Buffer.byteLength(body));
    return entries;
  }

  /** The segment entry of a range's entry `index`; undefined only if its segment is gone. */
  async entryAt(
    queue: string,
    range: Pick<Range, 'shard' | 'segment'>,
    index: number,
  ): Promise<SegmentEntry | undefined> {
    return (await this.get(queue, range.shard, range.segment))?.[range.segment.offset + index];
  }

  /**
   * The envelope with its payload: a retry's entry (`ref`) takes it from the entry it points to.
   * Undefined when that segment is gone.
   */
  async resolve(queue: string, env: Envelope): Promise<Envelope | undefined> {
    if (!env.ref) return env;
    const target = (await this.get(queue, env.ref.shard, env.ref))?.[env.ref.index]?.envelope;
    if (!target) return undefined;
    const { ref: _ref, ...rest } = env;
    return {
      ...rest,
      ...(target.claim ? { claim: target.claim } : { payload: target.payload }),
    };
  }

  private remember(key: string, entries: SegmentEntry[], bytes: number): void {
    if (bytes > CACHE_BYTES / 4) return;
    const old = this.cache.get(key);
    if (old) {
      this.cache.delete(key);
      this.cached -= old.bytes;
    }
    this.cache.set(key, { entries, bytes });
    this.cached += bytes;
    for (const [k, v] of this.cache) {
      if (this.cached <= CACHE_BYTES) break;
      this.cache.delete(k);
      this.cached -= v.bytes;
    }
  }
}

function cacheKey(queue: string, shard: string, id: string): string {
  return `${queue}\u0000${shard}\u0000${id}`;
}
