import { type QueueConfig, streamName } from '../core/config.js';
import type { RawRecord, ShardReader } from '../log/shard-reader.js';
import { admissionEnvelope, type LogRecord, type RangeAdmission } from './range-admission.js';

/**
 * Produce's fast path (issue 12): after an append, the shards it landed on are admitted at once,
 * so what produce accepted is receivable when it answers instead of after dispatch's next poll
 * (about a second on AWS). A pass reads the log after the shard's last range, one page, and
 * admits that run like dispatch would (range-admission.ts: any number of callers admit a shard
 * exactly once). Nothing depends on it: what a pass does not admit (an error, a full window, a
 * backlog longer than a page) dispatch admits, and dispatch passes over what a pass did.
 * Per shard, one pass runs at a time in an instance; requests that land meanwhile share the next
 * pass, which reads everything they appended: under load a pass admits many requests' records,
 * so its cost per message falls toward dispatch's.
 */

export interface FastAdmissionDeps {
  tenant: string;
  admission: RangeAdmission;
  reader: ShardReader;
  now?: () => number;
}

/** Records one pass reads: a backlog longer than this is dispatch's to admit. */
const PAGE = 500;
/** After Kinesis refuses a read (a shard serves 5 a second), this instance leaves the shard to dispatch for a while. */
const THROTTLED_PAUSE_MS = 1000;

/** Pull queues whose file does not turn it off; ordered queues keep dispatch's single admitter. */
export function takesFastAdmission(config: QueueConfig): boolean {
  return config.fast_admission && !config.ordered && config.consumers.length === 0;
}

interface Slot {
  running?: Promise<void>;
  queued?: Promise<void>;
}

export class FastAdmission {
  private readonly slots = new Map<string, Slot>();
  private readonly throttledUntil = new Map<string, number>();

  constructor(private readonly deps: FastAdmissionDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** Admits the shards `landed` on; never throws (dispatch admits whatever this did not). */
  async afterAppend(queue: string, config: QueueConfig, landed: readonly { shard: string }[]): Promise<void> {
    if (!takesFastAdmission(config)) return;
    const shards = [...new Set(landed.map((l) => l.shard))];
    await Promise.all(
      shards.map((shard) => {
        const slot = `${queue}/${shard}`;
        if ((this.throttledUntil.get(slot) ?? 0) > this.now()) return undefined;
        return this.schedule(slot, () => this.pass(queue, config, shard, slot));
      }),
    );
  }

  /** One pass at a time per shard; whoever arrives during one waits for the single pass after it. */
  private schedule(slot: string, pass: () => Promise<void>): Promise<void> {
    const s = this.slots.get(slot) ?? {};
    this.slots.set(slot, s);
    if (!s.running) {
      s.running = pass().finally(() => {
        s.running = undefined;
      });
      return s.running;
    }
    s.queued ??= s.running.then(() => {
      s.queued = undefined;
      return this.schedule(slot, pass);
    });
    return s.queued;
  }

  private async pass(queue: string, config: QueueConfig, shard: string, slot: string): Promise<void> {
    const stream = streamName(this.deps.tenant, queue);
    try {
      await this.deps.admission.catchUp(
        queue,
        config,
        shard,
        async (after) => toLogRecords(await this.deps.reader.after(stream, shard, after, PAGE)),
        { waitForRoom: false },
      );
    } catch (err) {
      if ((err as { name?: string }).name === 'ProvisionedThroughputExceededException')
        this.throttledUntil.set(slot, this.now() + THROTTLED_PAUSE_MS);
    }
  }
}

/** What dispatch would offer of these records: envelopes, without Lambda consumers' own retries. */
function toLogRecords(raw: readonly RawRecord[]): LogRecord[] {
  return raw.flatMap((r) => {
    try {
      const envelope = admissionEnvelope(r.data);
      return envelope ? [{ sequence: r.sequence, envelope }] : [];
    } catch {
      // Not an envelope: dispatch logs it when it passes it over.
      return [];
    }
  });
}
