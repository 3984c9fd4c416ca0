import type { FastAdmission } from '../admission/fast-admission.js';
import type { ClaimStore } from '../claims/claims.js';
import { mapLimit } from '../core/async.js';
import { type QueueConfig, storageQuotaBytes } from '../core/config.js';
import { type ClaimRef, type Envelope, encodeEnvelope, payloadBytes } from '../core/envelope.js';
import { InvalidRequestError, QuotaExceededError } from '../core/errors.js';
import { newMessageId } from '../core/ids.js';
import { payloadProblem } from '../core/payload-check.js';
import { StorageRoom } from '../core/storage-room.js';
import type { ShardDirectory, StreamLog } from '../log/stream.js';
import type { Counters } from '../store/counters.js';
import type { DedupStore } from '../store/dedup.js';
import type { RangeStore } from '../store/ranges.js';
import type { StorageMeter } from '../store/storage.js';
import type { StreamMarks } from '../store/stream-marks.js';
import type { ProduceMessage } from '../wire/requests.js';
import type { ProduceResult } from '../wire/responses.js';

/**
 * The produce path: the queue's payload schema, dedup check, claim-check, append, then the dedup
 * record, then (fast admission) the lease layer. `accepted` only for what Kinesis acknowledged; `failed` (retryable) for what it did not,
 * and (not retryable) for a payload the schema refuses.
 */

export interface ProducerDeps {
  tenant: string;
  dedup: DedupStore;
  claims: ClaimStore;
  log: StreamLog;
  counters: Counters;
  storage: StorageMeter;
  /** Which stream the queue's ranges are of: produce refuses a queue moved off it (docs/streams.md). */
  streamMarks: Pick<StreamMarks, 'confirmAll'>;
  shards: Pick<ShardDirectory, 'shards' | 'learn'>;
  ranges: Pick<RangeStore, 'head'>;
  /** Admits what landed before produce answers (dispatch admits whatever it does not). */
  fastAdmission?: Pick<FastAdmission, 'afterAppend'>;
  now?: () => number;
}

/** How long a producer over the storage quota should wait: consumers free space in seconds, not ms. */
const STORAGE_RETRY_SECONDS = 5;

interface Prepared {
  index: number;
  messageId: string;
  /**
   * On the lease layer a server-assigned id has no dedup record: no producer sends it again, and
   * trace finds the message in the log by the id's time (operations/trace.ts).
   */
  serverId: boolean;
  message: ProduceMessage;
}

export class Producer {
  private readonly room = new StorageRoom();

  constructor(private readonly deps: ProducerDeps) {}

  async produce(
    queue: string,
    config: QueueConfig,
    messages: readonly ProduceMessage[],
  ): Promise<ProduceResult[]> {
    if (config.ordered) requireKeys(messages);
    const now = this.deps.now?.() ?? Date.now();
    const prepared: Prepared[] = messages.map((message, index) => ({
      index,
      message,
      messageId: message.message_id ?? newMessageId(now),
      serverId: message.message_id === undefined,
    }));
    const results = new Array<ProduceResult>(messages.length);

    // Within one request, later copies of an id share the first copy's fate.
    const firstById = new Map<string, Prepared>();
    const unique: Prepared[] = [];
    const repeats: Prepared[] = [];
    for (const p of prepared) {
      const problem = config.schema && (await payloadProblem(config.schema, p.message.payload));
      if (problem) {
        results[p.index] = failed(p.messageId, 'SCHEMA_VALIDATION_FAILED', problem, false);
        continue;
      }
      if (firstById.has(p.messageId)) repeats.push(p);
      else {
        firstById.set(p.messageId, p);
        unique.push(p);
      }
    }

    // None of the reads depends on another: one round trip, not three.
    const [known] = await Promise.all([
      this.deps.dedup.findAccepted(
        queue,
        unique.filter((p) => !p.serverId).map((p) => p.messageId),
        now,
      ),
      this.checkStorage(queue, config, unique, now),
      this.confirmStream(queue, config),
    ]);
    const fresh = unique.filter((p) => {
      if (!known.has(p.messageId)) return true;
      results[p.index] = { message_id: p.messageId, status: 'duplicate' };
      return false;
    });

    const envelopes = await mapLimit(fresh, 8, (p) => this.envelopeFor(queue, config, p, now));
    const toAppend = fresh.filter((p, i) => {
      const env = envelopes[i];
      if (env instanceof Error) {
        results[p.index] = failed(p.messageId, 'CLAIM_CHECK_FAILED', env.message);
        return false;
      }
      return true;
    });
    const appendEnvelopes = envelopes.filter((e): e is Envelope => !(e instanceof Error));
    const appended = await this.deps.log.append(
      config.stream,
      appendEnvelopes.map((env) => ({ partitionKey: env.key ?? env.message_id, data: encodeEnvelope(env) })),
      { preserveKeyOrder: config.ordered },
    );

    const landed: { p: Prepared; shard: string; sequence: string }[] = [];
    toAppend.forEach((p, i) => {
      const r = appended[i];
      if (r?.ok) landed.push({ p, shard: r.shardId, sequence: r.sequenceNumber });
      else
        results[p.index] = failed(
          p.messageId,
          'UNAVAILABLE',
          r ? `${r.errorCode}: ${r.errorMessage}` : 'not sent',
        );
    });

    // A record on a shard this instance has not listed: the stream was resharded.
    for (const shard of new Set(landed.map((l) => l.shard)))
      await this.deps.shards.learn(config.stream, shard);
    // The storage meter does not wait for the dedup records; the totals do (a lost race is a duplicate).
    const named = landed.filter((l) => !l.p.serverId);
    // Fast admission after the dedup records: admission claims a producer id's position, which
    // would turn markLanded's own write into a duplicate.
    const [marks] = await Promise.all([
      this.markLanded(queue, config, named, now).then(async (marks) => {
        await Promise.all([
          this.count(queue, landed.length - named.length + marks.filter((m) => m !== false).length),
          this.deps.fastAdmission?.afterAppend(
            queue,
            config,
            landed.map((l) => ({ shard: l.shard })),
          ),
        ]);
        return new Map(named.map((l, i) => [l, marks[i]]));
      }),
      this.addStored(queue, config, landed),
    ]);
    landed.forEach((l) => {
      results[l.p.index] = {
        message_id: l.p.messageId,
        status: marks.get(l) === false ? 'duplicate' : 'accepted',
      };
    });

    for (const p of repeats) {
      const first = results[(firstById.get(p.messageId) as Prepared).index] as ProduceResult;
      results[p.index] = first.status === 'failed' ? first : { message_id: p.messageId, status: 'duplicate' };
    }
    return results;
  }

  /** Refuses a queue whose ranges are of another stream (StreamMovedError), once a process per shard. */
  private async confirmStream(queue: string, config: QueueConfig): Promise<void> {
    const shards = await this.deps.shards.shards(config.stream);
    await this.deps.streamMarks.confirmAll(
      queue,
      config.stream,
      shards,
      async (shard) => (await this.deps.ranges.head(queue, shard)) !== undefined,
    );
  }

  /**
   * A queue that holds its storage quota takes no more until consumers catch up (a push queue's
   * slowest Lambda consumer).
   */
  private async checkStorage(
    queue: string,
    config: QueueConfig,
    batch: readonly Prepared[],
    now: number,
  ): Promise<void> {
    const bytes = payloadTotal(batch);
    if (this.room.take(queue, bytes, now)) return;
    const used = await this.deps.storage.used(queue, config);
    const quota = storageQuotaBytes(config);
    // This request's bytes count in what the read leaves for the next ones.
    this.room.read(queue, used + bytes, quota, now);
    if (used >= quota) {
      throw new QuotaExceededError(
        `queue ${queue} holds ${used} bytes, its storage quota is ${quota}`,
        STORAGE_RETRY_SECONDS,
      );
    }
  }

  /** What landed counts against the storage quota; best effort, like the totals. */
  private async addStored(
    queue: string,
    config: QueueConfig,
    landed: readonly { p: Prepared }[],
  ): Promise<void> {
    const bytes = payloadTotal(landed.map((l) => l.p));
    await this.deps.storage.produced(queue, config, bytes).catch(() => undefined);
  }

  /** Totals are best effort: a counter write that fails must not turn accepted into an error. */
  private async count(queue: string, produced: number): Promise<void> {
    await this.deps.counters.addStats(queue, { produced }).catch(() => undefined);
  }

  /**
   * The message is in the log whatever happens here: a dedup record that cannot be written
   * only means a retry of this id appends a second copy, which dispatch admits once.
   */
  private async markLanded(
    queue: string,
    config: QueueConfig,
    landed: readonly { p: Prepared; shard: string; sequence: string }[],
    now: number,
  ): Promise<(boolean | undefined)[]> {
    try {
      return await this.deps.dedup.markAllAccepted(
        queue,
        landed.map((l) => ({
          messageId: l.p.messageId,
          record: { shard: l.shard, sequence: l.sequence, acceptedAt: now },
        })),
        config.dedup_window_seconds,
      );
    } catch {
      return landed.map(() => undefined);
    }
  }

  private async envelopeFor(
    queue: string,
    config: QueueConfig,
    p: Prepared,
    now: number,
  ): Promise<Envelope | Error> {
    const { message } = p;
    const at = new Date(now).toISOString();
    const body = Buffer.from(JSON.stringify(message.payload), 'utf8');
    let claim: ClaimRef | undefined;
    if (body.byteLength > config.claim_check_bytes) {
      try {
        claim = await this.deps.claims.put(queue, p.messageId, body);
      } catch (err) {
        return err instanceof Error ? err : new Error(String(err));
      }
    }
    return {
      v: 1,
      message_id: p.messageId,
      ...(p.serverId ? { server_id: true as const } : {}),
      queue,
      ...(message.key !== undefined ? { key: message.key } : {}),
      ...(message.headers ? { headers: message.headers } : {}),
      ...(message.attributes ? { attributes: message.attributes } : {}),
      ...(config.schema_ref !== undefined ? { schema_ref: config.schema_ref } : {}),
      ...(message.traceparent !== undefined ? { traceparent: message.traceparent } : {}),
      produced_at: at,
      enqueued_at: at,
      attempt: 1,
      entry: 1,
      ...(message.delay_seconds > 0
        ? { deliver_after: new Date(now + message.delay_seconds * 1000).toISOString() }
        : {}),
      ...(claim ? { claim } : { payload: message.payload }),
    };
  }
}

function payloadTotal(batch: readonly Prepared[]): number {
  return batch.reduce((sum, p) => sum + payloadBytes({ payload: p.message.payload }), 0);
}

function failed(messageId: string, code: string, message: string, retryable = true): ProduceResult {
  return { message_id: messageId, status: 'failed', error: { code, message, retryable } };
}

function requireKeys(messages: readonly ProduceMessage[]): void {
  const issues = messages.flatMap((m, i) =>
    m.key === undefined
      ? [{ path: `messages[${i}].key`, message: 'ordered queues need a key on every message' }]
      : [],
  );
  if (issues.length) throw new InvalidRequestError('ordered queues need a key on every message', issues);
}
