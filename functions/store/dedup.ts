import { BatchGetCommand, type DocumentClient, GetCommand, PutCommand } from '../aws/dynamodb.js';
import { mapLimit, sleep } from '../core/async.js';
import { dedupKey, TTL_ATTRIBUTE } from './keys.js';
import { isConditionFailed, retryUnprocessed } from './util.js';

/**
 * Producer dedup. The record is written only after the message is in the log, so
 * `duplicate` is never answered for a message that is not there. A crash between the
 * append and this write leaves no record: the producer's retry appends again, and dispatch
 * admits a message id once.
 */

export interface DedupRecord {
  shard: string;
  sequence: string;
  acceptedAt: number;
}

const BATCH_GET_LIMIT = 100;
/** How long admission gives producers still writing their records before it claims their copies. */
const MARKING_WAIT_MS = 100;

export class DedupStore {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
    /** How long admission waits for a producer still writing its record (claimPositions). */
    private readonly markingWaitMs = MARKING_WAIT_MS,
  ) {}

  /** The ids among `ids` already accepted within their dedup window. */
  async findAccepted(queue: string, ids: readonly string[], now: number): Promise<Set<string>> {
    return new Set((await this.records(queue, ids, true, now)).keys());
  }

  /** The dedup records of these ids, while their windows last: where each was admitted. */
  positions(queue: string, ids: readonly string[], now: number): Promise<Map<string, DedupRecord>> {
    return this.records(queue, ids, false, now);
  }

  /** The dedup record of an id, while its window lasts. */
  async get(
    queue: string,
    messageId: string,
    now = Date.now(),
    consistent = false,
  ): Promise<DedupRecord | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: dedupKey(queue, messageId), ConsistentRead: consistent }),
    );
    return out.Item ? recordOf(out.Item, now) : undefined;
  }

  /**
   * Records that `messageId` is in the log at its position. False when an unexpired record of
   * another position already exists (another request accepted the same id first); true when the
   * record there is of this very position (dispatch may write it first: see claimPositions).
   */
  async markAccepted(
    queue: string,
    messageId: string,
    record: DedupRecord,
    windowSeconds: number,
  ): Promise<boolean> {
    const expiresAt = record.acceptedAt + windowSeconds * 1000;
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: {
            ...dedupKey(queue, messageId),
            message_id: messageId,
            shard: record.shard,
            sequence: record.sequence,
            accepted_at: record.acceptedAt,
            expires_at: expiresAt,
            [TTL_ATTRIBUTE]: Math.ceil(expiresAt / 1000),
          },
          ConditionExpression: 'attribute_not_exists(pk) OR expires_at < :now',
          ExpressionAttributeValues: { ':now': record.acceptedAt },
        }),
      );
      return true;
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      const existing = await this.get(queue, messageId, record.acceptedAt, true);
      return existing?.shard === record.shard && existing.sequence === record.sequence;
    }
  }

  /**
   * Admission of producer-chosen ids into the lease layer: is each copy in the log the one that
   * was accepted? A record names the accepted position; a copy with no record (its producer
   * crashed between the append and the record) claims it, so a retried copy that lands later is
   * passed over. Reads are eventually consistent: records never change, and a missed one only
   * makes the claim's conditional write fail and look again.
   */
  async claimPositions(
    queue: string,
    copies: readonly { messageId: string; record: DedupRecord; markedBy?: number }[],
    windowSeconds: number,
  ): Promise<boolean[]> {
    const now = copies[0]?.record.acceptedAt ?? 0;
    // A batch may hold two copies of one id (a producer's retry): BatchGetItem refuses repeated keys.
    const known = await this.records(
      queue,
      copies.map((c) => c.messageId),
      false,
      now,
    );
    // A copy whose producer is likely still writing its record (right after its append): claimed
    // now, the producer's own write would fail, a write unit each and a read. Looked at again
    // after a moment instead; what is still missing then is claimed.
    const marking = copies.filter((c) => !known.has(c.messageId) && (c.markedBy ?? 0) > now);
    if (marking.length) {
      await sleep(this.markingWaitMs);
      for (const [id, record] of await this.records(
        queue,
        marking.map((c) => c.messageId),
        true,
        now,
      ))
        known.set(id, record);
    }
    return mapLimit(copies, 16, async (c) => {
      const found = known.get(c.messageId);
      if (found) return found.shard === c.record.shard && found.sequence === c.record.sequence;
      return this.markAccepted(queue, c.messageId, c.record, windowSeconds);
    });
  }

  /** The unexpired records of `ids`, by id (an id given twice is read once). */
  private async records(
    queue: string,
    given: readonly string[],
    consistent: boolean,
    now: number,
  ): Promise<Map<string, DedupRecord>> {
    const known = new Map<string, DedupRecord>();
    const ids = [...new Set(given)];
    for (let i = 0; i < ids.length; i += BATCH_GET_LIMIT) {
      const keys = ids.slice(i, i + BATCH_GET_LIMIT).map((id) => dedupKey(queue, id));
      await retryUnprocessed(keys, async (pending) => {
        const out = await this.doc.send(
          new BatchGetCommand({
            RequestItems: { [this.table]: { Keys: pending, ConsistentRead: consistent } },
          }),
        );
        for (const item of out.Responses?.[this.table] ?? []) {
          const record = recordOf(item, now);
          if (record) known.set(String(item.message_id), record);
        }
        return (out.UnprocessedKeys?.[this.table]?.Keys ?? []) as typeof pending;
      });
    }
    return known;
  }

  markAllAccepted(
    queue: string,
    entries: readonly { messageId: string; record: DedupRecord }[],
    windowSeconds: number,
  ): Promise<boolean[]> {
    return mapLimit(entries, 16, (e) => this.markAccepted(queue, e.messageId, e.record, windowSeconds));
  }
}

function recordOf(item: Record<string, unknown>, now: number): DedupRecord | undefined {
  if (!(Number(item.expires_at) > now)) return undefined;
  return { shard: String(item.shard), sequence: String(item.sequence), acceptedAt: Number(item.accepted_at) };
}
