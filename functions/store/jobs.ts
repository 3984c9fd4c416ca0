import { type DocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '../aws/dynamodb.js';
import { NotFoundError } from '../core/errors.js';
import type { RedriveFilterSpec } from '../core/redrive-policy.js';
import type { ReplayFilterSpec } from '../core/replay-policy.js';
import { buildKeyCondition, buildUpdate } from './expression.js';
import { GSI1, gsi, type ItemKey, redriveKey, replayKey, retentionKey } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * An operator's background job on a queue (redrive, replay, DLQ retention; operations/job-runner.ts runs them):
 * one item each, in its kind's index of the queue while running, so the sweep finds what to run
 * with one query.
 */

export type JobStatus = 'running' | 'done' | 'cancelled';

export interface Job {
  queue: string;
  status: JobStatus;
  rate_per_sec: number;
  created_at: number;
  created_by: string;
  /** Token bucket of the job's rate. */
  credit: number;
  last_run_at: number;
  /**
   * Counts the job's progress writes: each is made on the one before, so a write the SDK sends
   * again after a lost answer (it had landed) is not counted twice. Absent until the first.
   */
  pass?: number;
}

/** A redrive (operations/redrive.ts). */
export interface RedriveJob extends Job {
  redrive_id: string;
  filter: RedriveFilterSpec;
  moved: number;
  remaining: number;
  /** Only messages dead by then: a message that dies again after its redrive is not taken twice. */
  dead_until: number;
  /** The DLQ index position already examined. */
  cursor?: string;
  /**
   * The batch a pass is moving, saved before it moves: a pass that stops before it saves what
   * moved leaves the next one to count it (a moved message's entry is past the one named here).
   */
  pending?: { id: string; entry: number }[];
  /**
   * The time of the pass moving `pending`, which its `redriven` events carry: the pass that counts
   * the batch writes them again at that time, the same items, so none is missing and none doubled.
   */
  pending_at?: number;
}

/** A replay (operations/replay.ts). */
export interface ReplayJob extends Job {
  replay_id: string;
  /** The window of arrival times (epoch ms), `to` no later than the job's start. */
  from: number;
  to: number;
  filter: ReplayFilterSpec;
  /** Copies appended, and records of the window read (matching or not). */
  replayed: number;
  scanned: number;
  /** The stream's shards when the job started, and for each the last record it is past. */
  shards: string[];
  cursors: Record<string, string>;
  /** Shards read through the window's end. */
  finished: string[];
}

/** A DLQ retention extension (operations/dlq-retention.ts). */
export interface RetentionJob extends Job {
  retention_id: string;
  /** The DLQ retention the dead letters get, counted from each one's death. */
  dlq_retention_hours: number;
  reason: string;
  /** Dead letters kept longer, and those already kept as long. */
  extended: number;
  unchanged: number;
  /** Dead letters when it started. */
  total: number;
  /** Only messages dead by then: later deaths are stamped with the retention of their time. */
  dead_until: number;
  /** The DLQ index position already examined. */
  cursor?: string;
}

/** What one progress write does: counts added, fields set and removed. */
export interface JobChange<J extends Job> {
  add?: Record<string, number>;
  set: Partial<Omit<J, 'queue' | 'pass'>> & Pick<J, 'status'>;
  remove?: string[];
}

export interface JobKind<J extends Job> {
  /** Names the kind in a 404's message. */
  noun: string;
  key: (queue: string, id: string) => ItemKey;
  /** The index partition of the queue's running jobs of this kind. */
  running: (queue: string) => string;
  id: (job: J) => string;
}

const KINDS: {
  redrive: JobKind<RedriveJob>;
  replay: JobKind<ReplayJob>;
  retention: JobKind<RetentionJob>;
} = {
  redrive: { noun: 'redrive', key: redriveKey, running: gsi.redrives, id: (job) => job.redrive_id },
  replay: { noun: 'replay', key: replayKey, running: gsi.replays, id: (job) => job.replay_id },
  retention: { noun: 'retention', key: retentionKey, running: gsi.retentions, id: (job) => job.retention_id },
};

export type RedriveJobs = JobStore<RedriveJob>;
export type ReplayJobs = JobStore<ReplayJob>;
export type RetentionJobs = JobStore<RetentionJob>;

/** The table's stores of each kind of job. */
export function jobStores(
  doc: DocumentClient,
  table: string,
): { redrives: RedriveJobs; replays: ReplayJobs; retentions: RetentionJobs } {
  return {
    redrives: new JobStore(doc, table, KINDS.redrive),
    replays: new JobStore(doc, table, KINDS.replay),
    retentions: new JobStore(doc, table, KINDS.retention),
  };
}

export class JobStore<J extends Job> {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
    private readonly kind: JobKind<J>,
  ) {}

  async create(job: J): Promise<void> {
    const id = this.kind.id(job);
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          ...this.kind.key(job.queue, id),
          ...job,
          ...(job.status === 'running' ? { gsi1pk: this.kind.running(job.queue), gsi1sk: id } : {}),
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  async get(queue: string, id: string): Promise<J | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: this.kind.key(queue, id), ConsistentRead: true }),
    );
    return out.Item as J | undefined;
  }

  /** The job, or 404 NOT_FOUND. */
  async found(queue: string, id: string): Promise<J> {
    const job = await this.get(queue, id);
    if (!job) throw new NotFoundError(`no ${this.kind.noun} ${JSON.stringify(id)} on this queue`);
    return job;
  }

  /** Cancels the job if it runs; answers it as it is now, and whether this call cancelled it. */
  async cancelById(queue: string, id: string): Promise<{ job: J; cancelled: boolean }> {
    const job = await this.found(queue, id);
    const cancelled = job.status === 'running' && (await this.cancel(job));
    return { job: await this.found(queue, id), cancelled };
  }

  /**
   * The queue's running jobs, each read again from the table: the index may not show a pass's
   * last write yet, and the next pass writes on it (`pass`).
   */
  async running(queue: string): Promise<J[]> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: GSI1,
        ...buildKeyCondition('#gsi1pk = :pk', { ':pk': this.kind.running(queue) }),
      }),
    );
    const jobs: (J | undefined)[] = await Promise.all(
      ((out.Items ?? []) as J[]).map((found) => this.get(queue, this.kind.id(found))),
    );
    return jobs.filter((job): job is J => job?.status === 'running');
  }

  /**
   * Saves a pass's progress in one write, once: its counts (`add`) and where it stands (`set`,
   * `remove`), on the write before it (`job.pass`, which it moves on). Counted whatever happened
   * meanwhile (a cancel during the pass must not hide messages that did move); the rest only while
   * the job runs. Answers whether it ran on: false when cancelled (or moved on by another pass).
   */
  async progress(job: J, change: JobChange<J>): Promise<boolean> {
    const remove = [
      ...(change.remove ?? []),
      ...(change.set.status !== 'running' ? ['gsi1pk', 'gsi1sk'] : []),
    ];
    const add = Object.fromEntries(Object.entries(change.add ?? {}).filter(([, n]) => n !== 0));
    const counts = Object.keys(add).length > 0;
    const whole = { ...(counts ? { add } : {}), set: change.set, remove };
    if (await this.onPass(job, whole, '#status = :running', { ':running': 'running' })) return true;
    if (counts) await this.onPass(job, { add, set: {}, remove: change.remove ?? [] });
    return false;
  }

  /**
   * One write made on the job's last one (`pass`), which it moves on; a write whose answer was
   * lost but which landed reads as made. Answers false when the condition held the write back.
   */
  private async onPass(
    job: J,
    spec: { add?: Record<string, number>; set: Record<string, unknown>; remove: string[] },
    condition?: string,
    values: Record<string, unknown> = {},
  ): Promise<boolean> {
    const before = job.pass ?? 0;
    const after = before + 1;
    const samePass = '(attribute_not_exists(#pass) OR #pass = :before)';
    const written = await this.update(job, {
      ...(spec.add ? { add: spec.add } : {}),
      set: { ...spec.set, pass: after },
      remove: spec.remove,
      condition: condition ? `${samePass} AND ${condition}` : samePass,
      values: { ...values, ':before': before },
    }).catch(async (err) => {
      // A timeout after which the write may have landed: the item says.
      if ((await this.get(job.queue, this.kind.id(job)))?.pass === after) return true;
      throw err;
    });
    if (written || (await this.get(job.queue, this.kind.id(job)))?.pass === after) {
      job.pass = after;
      return true;
    }
    return false;
  }

  cancel(job: J): Promise<boolean> {
    return this.update(job, {
      set: { status: 'cancelled' },
      remove: ['gsi1pk', 'gsi1sk'],
      condition: '#status = :running',
      values: { ':running': 'running' },
    });
  }

  private async update(job: J, spec: Parameters<typeof buildUpdate>[0]): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: this.kind.key(job.queue, this.kind.id(job)),
          ...buildUpdate(spec),
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }
}
