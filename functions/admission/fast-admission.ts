import { sleep } from '../core/async.js';
import { namespaceParts, type QueueConfig, SHARD_READS_PER_SECOND } from '../core/config.js';
import { RANGE_ENTRIES } from '../core/ranges.js';
import { RecentRate } from '../core/recent-rate.js';
import { TokenBucket } from '../core/token-bucket.js';
import type { RawRecord, ShardReader } from '../log/shard-reader.js';
import { admissionEnvelope, type LogRecord, type RangeAdmission } from './range-admission.js';

/**
 * Produce's fast path (docs/overview.md, "Admission at produce"): after an append, the shards it
 * landed on are admitted at once, so what produce accepted is receivable when it answers instead
 * of after dispatch's next poll (about a second on AWS). A pass reads the log after the shard's
 * last range, one page, and admits that run like dispatch would (range-admission.ts: any number
 * of callers admit a shard exactly once). Nothing depends on it: what a pass does not admit (an
 * error, a full window, a backlog longer than a page) dispatch admits, and dispatch passes over
 * what a pass did. Per stream's shard, one pass runs at a time in an instance; it reads the
 * shard once for every queue that landed on it since the last pass (the queues of a shared stream
 * together) and reads everything appended before it reads. A shard serves 5 reads a second to all
 * its readers, so an instance's passes take 3 of them, 4 on enhanced fan-out (passReads): past
 * that, the next pass waits for its read rather than be refused, and requests that land meanwhile
 * answer at once, their records left to it. A pass costs about what a dispatch batch does (a
 * segment, a range or two), so passes under load cut the log into ranges of a few entries where
 * dispatch's second-long batches fill them: every range costs its creation, a lease write and an
 * ack write whatever it holds. `quiet` (the default) therefore admits fast only while the shard
 * took under a range's worth of records in the last second in this instance (always on fan-out:
 * backsOffUnderLoad); `always` buys latency with those units.
 */

export interface FastAdmissionDeps {
  admission: RangeAdmission;
  reader: ShardReader;
  now?: () => number;
}

/** Records one pass reads: a backlog longer than this is dispatch's to admit. */
const PAGE = 500;
/**
 * A shard's reads a second that one instance's passes take: the rest are dispatch's polls (one a
 * second, two while records come), and the sweep's and trace's occasional reads. Paced by a token
 * bucket that holds one and a half: a pass at once after a quiet spell, then one every third of a
 * second. A window of 3 a second would let bursts spend it and keep the next pass waiting up to a
 * second (p99 ~650 ms against ~350 ms in a simulation at 2-10 requests a second).
 */
const PASS_READS = { perSecond: SHARD_READS_PER_SECOND - 2, burst: 1.5 } as const;
/**
 * On a stream whose mappings read on enhanced fan-out, dispatch's reads are pushed and do not count
 * against the five: passes take four, leaving one for the sweep's and trace's.
 */
const PASS_READS_FAN_OUT = { ...PASS_READS, perSecond: SHARD_READS_PER_SECOND - 1 } as const;

/** An instance's share of a shard's reads for a queue's passes, by whether its stream is on fan-out. */
export function passReads(config: QueueConfig): { perSecond: number; burst: number } {
  return config.fan_out === 'always' ? PASS_READS_FAN_OUT : PASS_READS;
}

/** A pass whose read Kinesis refused (other readers had the shard's second) reads again this much later. */
const REFUSED_RETRY_MS = 200;
/** After a second refusal, this instance leaves the shard to dispatch for a while. */
const THROTTLED_PAUSE_MS = 1000;
/**
 * After a pass that read a whole page or could take none of what it read, this instance leaves the
 * queue's shard to dispatch and the sweep for a while: the queue is behind (a backlog in the log,
 * or a full window, a lag on a shared stream), and each pass would read up to a page of it to
 * admit little or nothing, spending the shard's reads and, locally, the emulator thread every
 * queue's calls wait on.
 */
const BEHIND_PAUSE_MS = 2000;

/** Pull queues (ordered ones too) whose file does not turn it off; Lambda consumers are invoked by their mapping. */
export function takesFastAdmission(config: QueueConfig): boolean {
  return config.fast_admission !== 'off' && config.consumers.length === 0;
}

/**
 * `quiet` leaves a busy shard to dispatch, whose second-long batches keep ranges full. A mapping
 * on enhanced fan-out is pushed batches as small as a pass's, so there `quiet` admits as `always`
 * does: on fan-out, c4-paced measured 2.23 base write units a message quiet and 2.13 always.
 */
function backsOffUnderLoad(config: QueueConfig): boolean {
  return config.fast_admission === 'quiet' && config.fan_out !== 'always';
}

/** One stream's shard in this instance: its passes admit every queue that landed on it. */
interface Slot {
  /** The pass that reads now. */
  running?: Promise<void>;
  /** The pass that has not read yet: whoever lands now is admitted by it. */
  next?: Promise<void>;
  /** The queues the next pass admits: those that landed since the last one started. */
  queued: Map<string, QueueConfig>;
  /** This instance's share of the shard's reads. */
  reads: TokenBucket;
  /** Records each queue landed on the shard lately in this instance (`quiet`). */
  landed: Map<string, RecentRate>;
  /** Per queue: no pass admits it before this time (it is behind). */
  behindUntil: Map<string, number>;
  /** No pass before this time (throttled). */
  pausedUntil: number;
}

export class FastAdmission {
  /** By stream and shard. */
  private readonly slots = new Map<string, Slot>();

  constructor(private readonly deps: FastAdmissionDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /**
   * Admits the shards `landed` on, or leaves them to a pass already waiting for its read; never
   * throws (dispatch admits whatever this did not).
   */
  async afterAppend(queue: string, config: QueueConfig, landed: readonly { shard: string }[]): Promise<void> {
    if (!takesFastAdmission(config)) return;
    const perShard = new Map<string, number>();
    for (const { shard } of landed) perShard.set(shard, (perShard.get(shard) ?? 0) + 1);
    const now = this.now();
    await Promise.all(
      [...perShard].map(([shard, n]) => {
        const s = this.slot(config, shard, now);
        const rate = s.landed.get(queue) ?? new RecentRate();
        s.landed.set(queue, rate);
        const lastSecond = rate.add(n, now);
        if (backsOffUnderLoad(config) && lastSecond > RANGE_ENTRIES) return undefined;
        if (s.pausedUntil > now || (s.behindUntil.get(queue) ?? 0) > now) return undefined;
        s.queued.set(queue, config);
        return this.schedule(s, (queues) => this.pass(config.stream, shard, s, queues));
      }),
    );
  }

  private slot(config: QueueConfig, shard: string, now: number): Slot {
    const name = `${config.stream}/${shard}`;
    let s = this.slots.get(name);
    if (!s) {
      const share = passReads(config);
      s = {
        queued: new Map(),
        reads: new TokenBucket(share.perSecond, share.burst, now),
        landed: new Map(),
        behindUntil: new Map(),
        pausedUntil: 0,
      };
      this.slots.set(name, s);
    }
    return s;
  }

  /**
   * One pass at a time per shard, within the instance's share of the shard's reads; whoever
   * arrives before the next pass reads is admitted by it. Only the request that scheduled that
   * pass waits for it: the others answer at once, as a request that waits bills its instance's
   * time and its producer's, and the waiting one's pass reads their records as well.
   */
  private schedule(s: Slot, pass: (queues: Map<string, QueueConfig>) => Promise<void>): Promise<void> {
    if (s.next) return Promise.resolve();
    s.next = (async () => {
      await s.running;
      const wait = s.reads.reserve(1, this.now());
      if (wait > 0) await sleep(wait);
      s.next = undefined;
      const queues = s.queued;
      s.queued = new Map();
      const running = pass(queues);
      s.running = running;
      await running;
      if (s.running === running) s.running = undefined;
    })();
    return s.next;
  }

  /**
   * Reads the shard once for all `queues` (a queue whose last range ends elsewhere than that read
   * started reads again from its end) and admits each queue's records in its own ranges.
   */
  private async pass(
    stream: string,
    shard: string,
    s: Slot,
    queues: Map<string, QueueConfig>,
    refused = false,
  ): Promise<void> {
    const guess = this.deps.reader.resumesAfter(stream, shard);
    const pages = new Map<string | undefined, Promise<RawRecord[]>>();
    const page = (after: string | undefined) => {
      let read = pages.get(after);
      if (!read) {
        read = this.deps.reader.after(stream, shard, after, PAGE, { maxAttempts: 1 });
        pages.set(after, read);
      }
      return read;
    };
    const throttled = new Map<string, QueueConfig>();
    await Promise.all(
      [...queues].map(async ([queue, config]) => {
        let full = false;
        try {
          const { read, taken } = await this.deps.admission.catchUp(
            queue,
            config,
            shard,
            async (after) => {
              const raw = await page(after);
              // The read the queue admits from is the last: a guess that missed is read again.
              full = raw.length >= PAGE;
              return toLogRecords(raw, queue, config);
            },
            { waitForRoom: false, guess },
          );
          // None taken: a full window. A race lost to another admitter takes what the winner
          // covered, never none, and is no reason to leave the shard.
          if (full || (read > 0 && taken === 0)) s.behindUntil.set(queue, this.now() + BEHIND_PAUSE_MS);
        } catch (err) {
          if ((err as { name?: string }).name === 'ProvisionedThroughputExceededException')
            throttled.set(queue, config);
        }
      }),
    );
    if (throttled.size === 0) return;
    if (refused) {
      s.pausedUntil = this.now() + THROTTLED_PAUSE_MS;
      return;
    }
    // Another reader had the shard's second: one read of its own frees soon, and the SDK's
    // backoff for a throttled call (up to a second) would outwait dispatch.
    await sleep(Math.max(REFUSED_RETRY_MS, s.reads.reserve(1, this.now())));
    await this.pass(stream, shard, s, throttled, true);
  }
}

/**
 * What dispatch would offer `queue` of these records: envelopes, without Lambda consumers' own
 * retries, and on a shared stream only the queue's own.
 */
export function toLogRecords(raw: readonly RawRecord[], queue: string, config: QueueConfig): LogRecord[] {
  return raw.flatMap((r) => {
    try {
      const envelope = admissionEnvelope(r.data);
      if (!envelope || (config.shared_stream && namespaceParts(envelope.queue).queue !== queue)) return [];
      return [{ sequence: r.sequence, envelope }];
    } catch {
      // Not an envelope: dispatch logs it when it passes it over.
      return [];
    }
  });
}
