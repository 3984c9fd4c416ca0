import { namespaceParts, type QueueConfig, streamOf, type TenantConfig } from '../core/config.js';
import { decodeEnvelope, type Envelope, payloadBytes } from '../core/envelope.js';
import { admissionId, isReplayable, type ReplayFilterSpec, replayWindow } from '../core/replay-policy.js';
import type { Requeue } from '../delivery/requeue.js';
import type { RawRecord, ShardReader } from '../log/shard-reader.js';
import type { ShardDirectory } from '../log/stream.js';
import type { DedupStore } from '../store/dedup.js';
import type { ReplayJob } from '../store/jobs.js';
import type { MessageStore } from '../store/messages.js';
import type { StorageMeter } from '../store/storage.js';
import { type JobOpening, type JobPass, JobRunner, type JobRunnerDeps } from './job-runner.js';
import { iso } from './views.js';

/**
 * Replay by time: a job re-delivers the messages the queue accepted in a window, read back from
 * the log while it still has them, as new deliveries (attempt 1, `replay_id` on each, a
 * `replayed` event in their trace). The incident tool after a consumer processed messages
 * wrongly. Rate-limited and cancellable like redrive (JobRunner); the sweep runs the jobs.
 * `queue` may be a Lambda consumer's namespace: the copies go to that consumer only.
 */

export interface ReplayDeps extends JobRunnerDeps<ReplayJob> {
  tenant: TenantConfig;
  reader: ShardReader;
  shards: ShardDirectory;
  requeue: Requeue;
  messages: MessageStore;
  /** Where admission took each producer's message: a second copy in the log is not replayed. */
  dedup: Pick<DedupStore, 'positions'>;
  /** Holds what a replay appended, as produce's messages are held, until each is done with. */
  storage: StorageMeter;
}

export interface ReplayView {
  replay_id: string;
  status: ReplayJob['status'];
  from: string;
  to: string;
  replayed: number;
  scanned: number;
  shards: number;
  shards_done: number;
  rate_per_sec: number;
}

export interface ReplayRequest {
  from: string;
  to?: string | undefined;
  rate_per_sec: number;
  filter: ReplayFilterSpec;
}

/** Records read per page, and pages per shard per pass: a pass's reads stay bounded. */
const PAGE = 500;
const PAGES_PER_PASS = 4;

export class Replays extends JobRunner<ReplayJob, ReplayRequest, ReplayView, ReplayDeps> {
  protected readonly noun = 'replay';

  protected async open(
    queue: string,
    config: QueueConfig,
    request: ReplayRequest,
    id: string,
    now: number,
  ): Promise<JobOpening<ReplayJob>> {
    const window = replayWindow(request, config.retention_hours, now);
    const shards = await this.deps.shards.shards(this.stream(queue));
    return {
      fields: {
        replay_id: id,
        ...window,
        filter: request.filter,
        replayed: 0,
        scanned: 0,
        shards,
        cursors: {},
        finished: [],
      },
      detail: {
        from: iso(window.from),
        to: iso(window.to),
        filter: request.filter,
        rate_per_sec: request.rate_per_sec,
      },
    };
  }

  protected view(job: ReplayJob): ReplayView {
    return {
      replay_id: job.replay_id,
      status: job.status,
      from: iso(job.from),
      to: iso(job.to),
      replayed: job.replayed,
      scanned: job.scanned,
      shards: job.shards.length,
      shards_done: job.finished.length,
      rate_per_sec: job.rate_per_sec,
    };
  }

  private stream(queue: string): string {
    return streamOf(this.deps.tenant, queue);
  }

  /**
   * Each shard in turn from its cursor on, until `take` copies are appended. Its cursors are
   * saved with its counts in the pass's one write: a pass that stops before it reads its records
   * again (their copies are admitted once) and counts them once.
   */
  protected async pass(
    queue: string,
    config: QueueConfig,
    job: ReplayJob,
    take: number,
    now: number,
  ): Promise<JobPass<ReplayJob>> {
    const cursors = { ...job.cursors };
    const finished = new Set(job.finished);
    let left = take;
    let replayed = 0;
    let scanned = 0;
    for (const shard of job.shards) {
      if (left <= 0) break;
      if (finished.has(shard)) continue;
      const pass = await this.replayShard(queue, config, job, shard, cursors[shard], left, now);
      replayed += pass.replayed;
      scanned += pass.scanned;
      left -= pass.replayed;
      if (pass.cursor !== undefined) cursors[shard] = pass.cursor;
      if (pass.finished) finished.add(shard);
    }
    return {
      counted: replayed,
      progress: {
        moved: replayed,
        add: { replayed, scanned },
        set: { cursors, finished: [...finished] },
        done: finished.size === job.shards.length,
      },
    };
  }

  /**
   * Up to `take` of a shard's matching records from its cursor on, appended as copies. The cursor
   * moves past what was examined up to the first copy that did not land, so that one is read again.
   */
  private async replayShard(
    queue: string,
    config: QueueConfig,
    job: ReplayJob,
    shard: string,
    cursor: string | undefined,
    take: number,
    now: number,
  ): Promise<{ replayed: number; scanned: number; cursor: string | undefined; finished: boolean }> {
    const examined: { sequence: string; before: string | undefined; envelope?: Envelope }[] = [];
    let at = cursor;
    let selected = 0;
    let finished = false;
    const from = cursor !== undefined ? { after: cursor } : { at: job.from };
    read: for await (const page of this.deps.reader.pages(
      this.stream(queue),
      shard,
      from,
      PAGE,
      PAGES_PER_PASS,
    )) {
      const matching = await this.admittedMatches(queue, shard, job, page.records, now);
      for (const r of page.records) {
        if (r.arrivedAt > job.to) {
          finished = true;
          break read;
        }
        const envelope = matching.get(r.sequence);
        const match = envelope !== undefined;
        examined.push({ sequence: r.sequence, before: at, ...(match ? { envelope } : {}) });
        at = r.sequence;
        if (match && ++selected >= take) break read;
      }
      if (page.atTip) finished = true;
    }
    const chosen = examined.filter((e) => e.envelope !== undefined);
    const landed = await this.deps.requeue.replay(
      queue,
      chosen.map((e) => e.envelope as Envelope),
      job.replay_id,
      now,
    );
    const missed = chosen.findIndex((_, i) => !landed[i]);
    if (missed >= 0) {
      at = chosen[missed]?.before;
      finished = false;
    }
    const copies = chosen.filter((_, i) => landed[i]).map((e) => e.envelope as Envelope);
    await this.afterLanding(queue, config, copies, job.replay_id, now);
    const scanned =
      missed >= 0 ? examined.indexOf(chosen[missed] as (typeof examined)[number]) : examined.length;
    return { replayed: copies.length, scanned, cursor: at, finished };
  }

  /**
   * The page's records the job takes, by sequence: replayable, and the copy admission took of its
   * producer's id. A producer's retry after a lost answer appends its message again, and admission
   * passes that copy over; replayed too, it would be counted twice. An id whose dedup record has
   * expired (past `dedup_window_seconds`) is taken as it is.
   */
  private async admittedMatches(
    queue: string,
    shard: string,
    job: ReplayJob,
    records: readonly RawRecord[],
    now: number,
  ): Promise<Map<string, Envelope>> {
    const own = namespaceParts(queue).queue;
    const matches = records.flatMap((r) => {
      const envelope = parse(r.data);
      // A shared stream carries the other queues' records too.
      const ours = envelope !== undefined && namespaceParts(envelope.queue).queue === own;
      return ours && isReplayable(envelope, r.arrivedAt, job, job.filter) ? [{ r, envelope }] : [];
    });
    const producerIds = matches
      .filter((m) => admissionId(m.envelope) !== undefined)
      .map((m) => m.envelope.message_id);
    const admitted = producerIds.length
      ? await this.deps.dedup.positions(namespaceParts(queue).queue, producerIds, now)
      : new Map();
    return new Map(
      matches
        .filter(({ r, envelope }) => {
          const at = admitted.get(envelope.message_id);
          return at === undefined || (at.shard === shard && at.sequence === r.sequence);
        })
        .map(({ r, envelope }) => [r.sequence, envelope]),
    );
  }

  /** The `replayed` event in each copy's trace, and its bytes in the queue's storage. */
  private async afterLanding(
    queue: string,
    config: QueueConfig,
    copies: readonly Envelope[],
    replayId: string,
    now: number,
  ): Promise<void> {
    if (!copies.length) return;
    const ids = copies.map((env) => env.message_id);
    await this.traceMoved(queue, config, ids, 'replayed', replayId, now);
    await this.deps.storage.add(
      queue,
      config,
      copies.reduce((sum, env) => sum + payloadBytes(env), 0),
    );
  }
}

function parse(data: Uint8Array): Envelope | undefined {
  try {
    return decodeEnvelope(data);
  } catch {
    // Not an envelope: nothing a replay can deliver.
    return undefined;
  }
}
