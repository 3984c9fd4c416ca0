import { mapLimit } from '../core/async.js';
import { namespaceParts, streamOf, type TenantConfig } from '../core/config.js';
import type { Envelope, PayloadRef } from '../core/envelope.js';
import { payloadSource, type Range } from '../core/ranges.js';
import { replayCopy } from '../core/replay-policy.js';
import type { StreamLog } from '../log/stream.js';
import { type MessageStore, type StateItem, type StoredBody, storedBody } from '../store/messages.js';
import type { SegmentEntry, SegmentStore } from '../store/segments.js';

/**
 * Puts messages back into their queue's stream as their next entry: due retries (the sweep) and
 * redriven dead letters (attempt 1 again); a replay's copies (a new life of their id); and wake records for a Lambda consumer's keys with held
 * messages. The new entry is appended first; the item
 * leaves its index partition only once the entry is in the log, so a crash in between leaves a
 * second copy, which admission takes once. On the lease layer the item is marked `ranged` where
 * the entry landed (a body there comes from its segment, `src`, when it has none of its own).
 */

export interface RequeueDeps {
  tenant: TenantConfig;
  messages: MessageStore;
  segments: SegmentStore;
  log: StreamLog;
}

export class Requeue {
  constructor(private readonly deps: RequeueDeps) {}

  /**
   * Appends the items (of one namespace) as their next entry, for the namespace's consumer only
   * when it is a consumer's. Answers the items that landed in the log.
   */
  async reappend(
    namespace: string,
    items: readonly StateItem[],
    from: 'delayed' | 'dead',
    now: number,
  ): Promise<StateItem[]> {
    if (!items.length) return [];
    const { queue, consumer } = namespaceParts(namespace);
    const ordered = this.deps.tenant.queues[queue]?.ordered ?? false;
    const [bodies, fromSegments] = await Promise.all([
      this.deps.messages.bodies(items),
      mapLimit(items, 8, (item) => this.segmentBody(namespace, item)),
    ]);
    const envelopes: Envelope[] = items.map((item, i) => {
      const body: (StoredBody & { ref?: PayloadRef }) | undefined = fromSegments[i] ?? bodies.get(item.pk);
      if (!body) throw new Error(`the body of ${item.message_id} is missing`);
      return {
        v: 1,
        ...body,
        // A consumer's stored body names its namespace; the record belongs to the queue.
        queue,
        attempt: from === 'dead' ? 1 : item.attempt,
        entry: item.entry + 1,
        enqueued_at: new Date(now).toISOString(),
        ...(consumer !== undefined ? { for: consumer } : {}),
      };
    });
    const appended = await this.append(queue, envelopes, ordered);
    const landed = items.filter((_, i) => appended[i]?.ok);
    await mapLimit(items, 16, async (item, i) => {
      const at = appended[i];
      if (!at?.ok) return;
      await this.deps.messages.markRanged(item, from, {
        shard: at.shardId,
        seq: at.sequenceNumber,
        attempt: (envelopes[i] as Envelope).attempt,
        enqueuedAt: now,
      });
    });
    return landed;
  }

  /**
   * The retry entries of nacked entries that waited in their ranges (core/ranges.ts waitsInRange),
   * each pointing back at the entry it retries (`from`) and at its payload (`ref`). Answers each
   * one's sequence number where it landed.
   */
  async appendRetries(
    queue: string,
    waiting: readonly { range: Range; index: number; entry: SegmentEntry }[],
    now: number,
  ): Promise<(string | undefined)[]> {
    if (!waiting.length) return [];
    const envelopes: Envelope[] = waiting.map(({ range, index, entry }) => {
      const { payload: _payload, claim: _claim, ...rest } = storedBody(entry.envelope);
      return {
        v: 1,
        ...rest,
        queue,
        attempt: entry.envelope.attempt + 1,
        entry: entry.envelope.entry + 1,
        enqueued_at: new Date(now).toISOString(),
        ref: payloadSource(range, index, entry.envelope.ref),
        from: { shard: range.shard, range: range.start, index },
      };
    });
    const appended = await this.append(queue, envelopes, false);
    return waiting.map((_, i) => {
      const at = appended[i];
      return at?.ok ? at.sequenceNumber : undefined;
    });
  }

  /**
   * A wake record for `key` (envelope.ts `wake`): the Lambda consumer of `namespace` delivers the
   * key's held messages when it reaches it. In the key's shard, as every message of the key.
   */
  async wake(namespace: string, key: string, now: number): Promise<boolean> {
    const { queue, consumer } = namespaceParts(namespace);
    const at = new Date(now).toISOString();
    const envelope: Envelope = {
      v: 1,
      message_id: `wake.${now}`,
      queue,
      key,
      produced_at: at,
      enqueued_at: at,
      attempt: 1,
      entry: 1,
      wake: true,
      ...(consumer !== undefined ? { for: consumer } : {}),
    };
    const [appended] = await this.append(queue, [envelope], false);
    return appended?.ok === true;
  }

  /**
   * A replay's copies of messages the log still has (core/replay-policy.ts replayCopy), in their
   * order, for the namespace's consumer only when it is a consumer's. Answers which landed.
   */
  async replay(
    namespace: string,
    originals: readonly Envelope[],
    replayId: string,
    now: number,
  ): Promise<boolean[]> {
    if (!originals.length) return [];
    const { queue, consumer } = namespaceParts(namespace);
    const ordered = this.deps.tenant.queues[queue]?.ordered ?? false;
    const copies = originals.map((env) => replayCopy(env, replayId, now, consumer));
    const appended = await this.append(queue, copies, ordered);
    return copies.map((_, i) => appended[i]?.ok === true);
  }

  /** Into the queue's stream, each under its key (or its id): every entry of a message in one shard. */
  private append(queue: string, envelopes: readonly Envelope[], preserveKeyOrder: boolean) {
    return this.deps.log.append(
      streamOf(this.deps.tenant, queue),
      envelopes.map((env) => ({
        partitionKey: env.key ?? env.message_id,
        data: Buffer.from(JSON.stringify(env)),
      })),
      { preserveKeyOrder },
    );
  }

  /**
   * A lease layer retry's body: its entry's envelope less the payload, which the new entry
   * references instead of carrying it again (into the log and a segment).
   */
  private async segmentBody(
    queue: string,
    item: StateItem,
  ): Promise<(StoredBody & { ref: PayloadRef }) | undefined> {
    if (!item.src) return undefined;
    const entry = (await this.deps.segments.get(queue, item.src.shard, item.src))?.[item.src.index];
    if (!entry) return undefined;
    const { payload: _payload, claim: _claim, ...rest } = storedBody(entry.envelope);
    return { ...rest, ref: item.src };
  }
}
