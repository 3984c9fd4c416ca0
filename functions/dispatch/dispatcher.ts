import type { Logger } from '@aws-lambda-powertools/logger';
import type { KinesisStreamBatchResponse, KinesisStreamEvent, KinesisStreamRecord } from 'aws-lambda';
import type { RangeAdmission } from '../admission/range-admission.js';
import { mapLimit, sleep } from '../core/async.js';
import { streamName, type TenantConfig, usesRanges } from '../core/config.js';
import { decodeEnvelope, type Envelope } from '../core/envelope.js';
import { retentionTtls } from '../core/retention.js';
import type { Counters } from '../store/counters.js';
import type { KeyState, KeyStates } from '../store/key-states.js';
import type { AdmitResult, MessageStore } from '../store/messages.js';

/**
 * dispatch: admits a shard's records into its lease window, up to `window_size` unacked.
 * When the window is full it reports the first record it could not admit as failed, so the
 * event source mapping retries from there and the backlog stays in Kinesis.
 */

export interface DispatcherDeps {
  tenant: TenantConfig;
  messages: MessageStore;
  counters: Counters;
  keys: KeyStates;
  admission: RangeAdmission;
  logger: Logger;
  /** How long a batch waits for a full window to free a slot before it fails. */
  windowWaitMs?: number;
  now?: () => number;
}

const WINDOW_POLL_MS = 100;

interface Decoded {
  record: KinesisStreamRecord;
  envelope: Envelope;
  immediate: boolean;
  held?: boolean;
}

export class Dispatcher {
  private readonly queueByStream: Map<string, string>;

  constructor(private readonly deps: DispatcherDeps) {
    this.queueByStream = new Map(
      Object.keys(deps.tenant.queues).map((q) => [streamName(deps.tenant.tenant, q), q]),
    );
  }

  async handle(event: KinesisStreamEvent): Promise<KinesisStreamBatchResponse> {
    const first = event.Records[0];
    if (!first) return { batchItemFailures: [] };
    const queue = this.queueOf(first.eventSourceARN);
    const config = this.deps.tenant.queues[queue];
    if (!config) throw new Error(`dispatch received records of unknown queue ${queue}`);
    const shard = first.eventID.split(':')[0] as string;
    const now = this.deps.now?.() ?? Date.now();

    const decoded = event.Records.flatMap((record) => this.decode(record, now));
    if (usesRanges(config)) {
      const records = decoded.map((d) => ({
        sequence: d.record.kinesis.sequenceNumber,
        envelope: d.envelope,
      }));
      const taken = await this.deps.admission.admit(queue, config, shard, records);
      const blocked = decoded[taken];
      return {
        batchItemFailures: blocked ? [{ itemIdentifier: blocked.record.kinesis.sequenceNumber }] : [],
      };
    }
    const keys = config.ordered ? await this.orderedKeys(queue, decoded) : undefined;
    let free = await this.freeSlots(
      queue,
      shard,
      config.window_size,
      decoded.some((d) => d.immediate),
    );
    // Admit the longest prefix that fits; not-yet-due messages go to the delay store and take no slot.
    let cut = decoded.length;
    for (let i = 0; i < decoded.length; i++) {
      const d = decoded[i] as Decoded;
      if (!d.immediate || d.held) continue;
      if (free <= 0) {
        cut = i;
        break;
      }
      free--;
    }
    const { bodyTtl } = retentionTtls(config, now);
    const admit = (d: Decoded, options: { held?: boolean; prev?: string } = {}) =>
      this.deps.messages
        .admit(shard, d.record.kinesis.sequenceNumber, d.envelope, now, bodyTtl, options)
        .then((admitted) => admitted.result);
    const batch = decoded.slice(0, cut);
    const results = keys
      ? await this.admitOrdered(queue, batch, keys, admit)
      : await mapLimit(batch, 16, (d) => admit(d));
    await this.deps.counters.addWindow(queue, shard, results.filter((r) => r === 'admitted').length);

    const blocked = decoded[cut];
    return { batchItemFailures: blocked ? [{ itemIdentifier: blocked.record.kinesis.sequenceNumber }] : [] };
  }

  /** Key states of the batch's keys; messages of a parked key are held and take no slot. */
  private async orderedKeys(queue: string, decoded: Decoded[]): Promise<Map<string, KeyState>> {
    const keys = await this.deps.keys.getMany(
      queue,
      decoded.flatMap((d) => (d.envelope.key === undefined ? [] : [d.envelope.key])),
    );
    for (const d of decoded) {
      const parked = d.envelope.key !== undefined && keys.get(d.envelope.key)?.parked_at !== undefined;
      if (parked) d.held = true;
    }
    return keys;
  }

  /**
   * Ordered admission: the messages of one key in log order, each chained to the one before
   * it (`prev`), then the key's tail moved once. Different keys go concurrently.
   */
  private async admitOrdered(
    queue: string,
    batch: Decoded[],
    keys: Map<string, KeyState>,
    admit: (d: Decoded, options: { held?: boolean; prev?: string }) => Promise<AdmitResult>,
  ): Promise<AdmitResult[]> {
    const results = new Array<AdmitResult>(batch.length);
    const byKey = new Map<string, number[]>();
    batch.forEach((d, i) => {
      const key = d.envelope.key ?? '';
      byKey.set(key, [...(byKey.get(key) ?? []), i]);
    });
    await mapLimit([...byKey], 16, async ([key, indexes]) => {
      let tail = keys.get(key)?.tail;
      const startTail = tail;
      for (const i of indexes) {
        const d = batch[i] as Decoded;
        const first = d.envelope.entry === 1;
        const result = await admit(d, {
          held: d.held === true,
          ...(first && tail !== undefined ? { prev: tail } : {}),
        });
        results[i] = result;
        if (first && result !== 'duplicate') tail = d.envelope.message_id;
      }
      if (tail !== undefined && tail !== startTail) await this.deps.keys.setTail(queue, key, tail);
    });
    return results;
  }

  /**
   * Free window slots. A full window is re-read for a short while before the batch fails:
   * an ack usually frees a slot within moments, sooner than the event source's retry.
   */
  private async freeSlots(queue: string, shard: string, size: number, needed: boolean): Promise<number> {
    const waitMs = this.deps.windowWaitMs ?? 1000;
    const deadline = Date.now() + waitMs;
    for (;;) {
      const free = size - (await this.deps.counters.window(queue, shard));
      if (free > 0 || !needed || Date.now() >= deadline) return free;
      await sleep(WINDOW_POLL_MS);
    }
  }

  private queueOf(arn: string): string {
    const stream = arn.slice(arn.indexOf('/') + 1);
    const queue = this.queueByStream.get(stream);
    if (!queue) throw new Error(`dispatch is not configured for stream ${stream}`);
    return queue;
  }

  /** A record that is not an envelope can never be delivered: it is logged and passed over, never retried. */
  private decode(record: KinesisStreamRecord, now: number): Decoded[] {
    try {
      const envelope = decodeEnvelope(Buffer.from(record.kinesis.data, 'base64'));
      // A Lambda consumer's retry, for that consumer alone (left in the log if the queue changed to pull).
      if (envelope.for !== undefined) return [];
      const due = envelope.deliver_after ? Date.parse(envelope.deliver_after) : 0;
      return [{ record, envelope, immediate: due <= now }];
    } catch (err) {
      this.deps.logger.error('skipping a record that is not a leaseq envelope', {
        sequenceNumber: record.kinesis.sequenceNumber,
        error: (err as Error).message,
      });
      return [];
    }
  }
}
