import { randomUUID } from 'node:crypto';
import { mapLimit } from '../core/async.js';
import type { QueueConfig } from '../core/config.js';
import { refill } from '../core/redrive-policy.js';
import { retentionTtls } from '../core/retention.js';
import type { AuditTrail } from '../store/audit.js';
import type { Job, JobChange, JobStore } from '../store/jobs.js';
import type { MessageStore } from '../store/messages.js';

/**
 * The lifecycle an operator's job on a queue has whatever its kind (redrive.ts, replay.ts):
 * started and cancelled with an audit entry, run by the sweep in passes at its rate (a token
 * bucket), each pass ending in one progress write. A kind supplies its fields at the start, what
 * one pass moves and how the job reads in answers. `queue` may be a Lambda consumer's namespace.
 */

export interface JobRunnerDeps<J extends Job> {
  jobs: JobStore<J>;
  audit: AuditTrail;
  messages: Pick<MessageStore, 'putEvent'>;
  now?: () => number;
}

/** A kind's own fields of a job, its id among them. */
export type JobFields<J extends Job> = Omit<J, keyof Job>;

/** A new job's own fields, and the detail of the audit entry of its start. */
export interface JobOpening<J extends Job> {
  fields: JobFields<J>;
  /** Nothing to move: the job is done as it starts. */
  empty?: boolean;
  detail: Record<string, unknown>;
}

export interface JobPass<J extends Job> {
  /** What the pass counts: what it moved, and what an earlier pass moved but did not count. */
  counted: number;
  /** What the pass's last write saves; absent when the job stopped running during the pass. */
  progress?: {
    /** What it moved, which spends the job's credit. */
    moved: number;
    add: Record<string, number>;
    set: Partial<JobFields<J>>;
    remove?: string[];
    /** Nothing is left to move. */
    done: boolean;
  };
}

/** What the API does with a kind's jobs, whatever the kind (api/routes/operations.ts). */
export interface JobControls<R> {
  start(queue: string, config: QueueConfig, request: R, actor: string): Promise<unknown>;
  get(queue: string, id: string): Promise<unknown>;
  cancel(queue: string, id: string, actor: string): Promise<unknown>;
}

export abstract class JobRunner<
  J extends Job,
  R extends { rate_per_sec: number },
  V,
  D extends JobRunnerDeps<J> = JobRunnerDeps<J>,
> implements JobControls<R>
{
  /** The kind's name in its audit entries (`redrive`, `redrive_cancel`). */
  protected abstract readonly noun: 'redrive' | 'replay' | 'retention';

  constructor(protected readonly deps: D) {}

  protected now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** A new job's own fields, read or counted at its start. */
  protected abstract open(
    queue: string,
    config: QueueConfig,
    request: R,
    id: string,
    now: number,
  ): Promise<JobOpening<J>>;

  /** Moves up to `take` messages of the job, from where its last pass stopped. */
  protected abstract pass(
    queue: string,
    config: QueueConfig,
    job: J,
    take: number,
    now: number,
  ): Promise<JobPass<J>>;

  protected abstract view(job: J): V;

  async start(queue: string, config: QueueConfig, request: R, actor: string): Promise<V> {
    const now = this.now();
    const id = randomUUID();
    const opening = await this.open(queue, config, request, id, now);
    const job = {
      ...opening.fields,
      queue,
      status: opening.empty ? 'done' : 'running',
      rate_per_sec: request.rate_per_sec,
      created_at: now,
      created_by: actor,
      credit: 0,
      last_run_at: now,
    } as J;
    // The audit entry first: a job never runs unrecorded. A start that fails after it leaves an
    // entry whose job does not exist (its GET answers 404), and the caller, answered 5xx, starts again.
    await this.deps.audit.record(
      queue,
      { action: this.noun, actor, target: id, detail: opening.detail },
      now,
    );
    await this.deps.jobs.create(job);
    return this.view(job);
  }

  async get(queue: string, id: string): Promise<V> {
    return this.view(await this.deps.jobs.found(queue, id));
  }

  async cancel(queue: string, id: string, actor: string): Promise<V> {
    const { job, cancelled } = await this.deps.jobs.cancelById(queue, id);
    if (cancelled)
      await this.deps.audit.record(queue, { action: `${this.noun}_cancel`, actor, target: id }, this.now());
    return this.view(job);
  }

  /** Whether a job of the queue is running (the sweep does not rest while one is). */
  async anyRunning(queue: string): Promise<boolean> {
    return (await this.deps.jobs.running(queue)).length > 0;
  }

  /** One pass of every running job of the queue, each at its own rate; answers what they moved. */
  async runPass(queue: string, config: QueueConfig): Promise<number> {
    let total = 0;
    for (const job of await this.deps.jobs.running(queue)) total += await this.runJob(queue, config, job);
    return total;
  }

  /** `event` (`redriven`, `replayed`) in the trace of each message the job moved, with its id. */
  protected async traceMoved(
    queue: string,
    config: QueueConfig,
    ids: readonly string[],
    event: string,
    jobId: string,
    now: number,
  ): Promise<void> {
    const ttl = retentionTtls(config, now).deadTtl;
    const detail = { [`${this.noun}_id`]: jobId };
    await mapLimit(ids, 16, (id) => this.deps.messages.putEvent(queue, id, { event, detail }, now, ttl));
  }

  private async runJob(queue: string, config: QueueConfig, job: J): Promise<number> {
    const now = this.now();
    const credit = refill(job.credit, job.last_run_at, now, job.rate_per_sec);
    const { counted, progress } = await this.pass(queue, config, job, Math.floor(credit), now);
    if (!progress) return counted;
    // Counts, credit and where the job stands in one write: a pass that stops before it leaves
    // the next to redo its moves or to count them (JobPass.counted).
    const change = {
      add: progress.add,
      set: {
        ...progress.set,
        credit: credit - progress.moved,
        last_run_at: now,
        status: progress.done ? 'done' : 'running',
      },
      ...(progress.remove ? { remove: progress.remove } : {}),
    } as JobChange<J>;
    await this.deps.jobs.progress(job, change);
    return counted;
  }
}
