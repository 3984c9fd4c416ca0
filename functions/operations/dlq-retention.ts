import type { QueueConfig } from '../core/config.js';
import { deadLetterExpiry } from '../core/retention.js';
import type { RetentionJob } from '../store/jobs.js';
import { gsi } from '../store/keys.js';
import type { MessageStore, StateItem } from '../store/messages.js';
import type { StorageMeter } from '../store/storage.js';
import { type JobOpening, type JobPass, JobRunner, type JobRunnerDeps } from './job-runner.js';

/**
 * A DLQ retention that reaches the dead letters already there. A dead letter's expiry is its
 * items' TTL, stamped at its death (core/retention.ts): raising `dlq_retention_hours` changes what
 * later deaths get, and this job moves the dead letters of before onto the new retention, counted
 * from each one's death: their items' TTLs and their bytes' expiry bucket (store/storage.ts). It
 * only ever extends. Started by an operator for an incident (audited), or by the sweep when the
 * tenant file's retention rises (`follow`). `queue` may be a Lambda consumer's namespace.
 */

export interface RetentionDeps extends JobRunnerDeps<RetentionJob> {
  messages: Pick<MessageStore, 'partition' | 'partitionAll' | 'extendDead' | 'putEvent'>;
  storage: Pick<StorageMeter, 'leftDlq' | 'deadLettered'>;
}

export interface RetentionRequest {
  dlq_retention_hours: number;
  reason: string;
  rate_per_sec: number;
}

export interface RetentionView {
  retention_id: string;
  status: RetentionJob['status'];
  dlq_retention_hours: number;
  reason: string;
  extended: number;
  unchanged: number;
  total: number;
  rate_per_sec: number;
}

const PAGE = 50;
const HOUR_MS = 3_600_000;
/** The sweep's extension after a tenant file's change: its actor, reason and rate. */
const FOLLOW = { actor: 'tenant file', reason: 'dlq_retention_hours raised in the tenant file', rate: 100 };

export class DlqRetentions extends JobRunner<RetentionJob, RetentionRequest, RetentionView, RetentionDeps> {
  protected readonly noun = 'retention';

  protected async open(
    queue: string,
    _config: QueueConfig,
    request: RetentionRequest,
    id: string,
    now: number,
  ): Promise<JobOpening<RetentionJob>> {
    const total = await this.countDead(queue, now);
    return {
      fields: {
        retention_id: id,
        dlq_retention_hours: request.dlq_retention_hours,
        reason: request.reason,
        extended: 0,
        unchanged: 0,
        total,
        dead_until: now,
      },
      empty: total === 0,
      detail: {
        dlq_retention_hours: request.dlq_retention_hours,
        reason: request.reason,
        dead_letters: total,
      },
    };
  }

  protected view(job: RetentionJob): RetentionView {
    return {
      retention_id: job.retention_id,
      status: job.status,
      dlq_retention_hours: job.dlq_retention_hours,
      reason: job.reason,
      extended: job.extended,
      unchanged: job.unchanged,
      total: job.total,
      rate_per_sec: job.rate_per_sec,
    };
  }

  /**
   * Up to `take` dead letters from the cursor, each extended (idempotent: a TTL is only raised),
   * counted by the progress write that moves the cursor past them: a pass that stops before it
   * is redone, and its dead letters counted then.
   */
  protected async pass(
    queue: string,
    config: QueueConfig,
    job: RetentionJob,
    take: number,
    _now: number,
  ): Promise<JobPass<RetentionJob>> {
    if (take < 1) return { counted: 0 };
    const limit = Math.min(PAGE, take);
    const page = await this.deps.messages.partition(gsi.dead(queue), {
      limit,
      ...(job.cursor ? { above: job.cursor } : {}),
    });
    // Later deaths are not this job's: the index is in dead-time order.
    const mine = page.filter((item) => (item.dead_at ?? 0) <= job.dead_until);
    let extended = 0;
    for (const item of mine) if (await this.extend(queue, config, item, job.dlq_retention_hours)) extended++;
    const last = mine.at(-1) as (StateItem & { gsi1sk: string }) | undefined;
    const done = mine.length < page.length || page.length < limit;
    return {
      counted: mine.length,
      progress: {
        moved: mine.length,
        add: { extended, unchanged: mine.length - extended },
        set: last ? { cursor: last.gsi1sk } : {},
        done,
      },
    };
  }

  /** One dead letter onto `hours` from its death; whether it was kept longer. */
  private async extend(queue: string, config: QueueConfig, item: StateItem, hours: number): Promise<boolean> {
    const before = deadLetterExpiry(item, config);
    const after = (item.dead_at ?? 0) + hours * HOUR_MS;
    if (after <= before) return false;
    if (!(await this.deps.messages.extendDead(queue, item, Math.ceil(after / 1000)))) return false;
    // Its bytes leave with it, now later.
    await this.deps.storage.leftDlq(queue, item.bytes ?? 0, before);
    await this.deps.storage.deadLettered(queue, item.bytes ?? 0, after);
    return true;
  }

  private async countDead(queue: string, now: number): Promise<number> {
    let count = 0;
    for await (const item of this.deps.messages.partitionAll(gsi.dead(queue)))
      if ((item.dead_at ?? 0) <= now) count++;
    return count;
  }

  /**
   * The sweep, about once a minute: when the oldest dead letter was stamped with a shorter DLQ
   * retention than the tenant file's (a deploy raised it), an extension of them all starts, unless
   * one runs. It reads one index item and writes nothing otherwise. To stop an extension for good,
   * put the retention back in the file: cancelled, it would start again at the next look.
   */
  async follow(queue: string, config: QueueConfig): Promise<void> {
    const [oldest] = await this.deps.messages.partition(gsi.dead(queue), { limit: 1 });
    if (!oldest || oldest.ttl === undefined) return;
    const due = (oldest.dead_at ?? 0) + config.dlq_retention_hours * HOUR_MS;
    // TTLs are whole seconds, rounded up from the death: a minute's margin tells a shorter retention.
    if (oldest.ttl * 1000 + 60_000 >= due || (await this.anyRunning(queue))) return;
    await this.start(
      queue,
      config,
      { dlq_retention_hours: config.dlq_retention_hours, reason: FOLLOW.reason, rate_per_sec: FOLLOW.rate },
      FOLLOW.actor,
    );
  }
}
