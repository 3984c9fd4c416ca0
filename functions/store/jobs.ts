import { type DocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '../aws/dynamodb.js';
import { NotFoundError } from '../core/errors.js';
import { buildKeyCondition, buildUpdate } from './expression.js';
import { GSI1, type ItemKey } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * An operator's background job on a queue (redrive, replay): one item each, in its kind's index
 * of the queue while running, so the sweep finds what to run with one query.
 */

export type JobStatus = 'running' | 'done' | 'cancelled';

export interface Job {
  queue: string;
  status: JobStatus;
}

export interface JobKind<J extends Job> {
  /** Names the kind in a 404's message. */
  noun: string;
  key: (queue: string, id: string) => ItemKey;
  /** The index partition of the queue's running jobs of this kind. */
  running: (queue: string) => string;
  id: (job: J) => string;
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

  async running(queue: string): Promise<J[]> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: GSI1,
        ...buildKeyCondition('#gsi1pk = :pk', { ':pk': this.kind.running(queue) }),
      }),
    );
    return (out.Items ?? []) as J[];
  }

  /**
   * Saves a pass's progress. What it did is counted (`add`) whatever happened meanwhile (a cancel
   * during the pass must not hide messages that did move); the rest (`set`) only while running.
   */
  async progress(
    job: J,
    add: Record<string, number>,
    set: Partial<Omit<J, 'queue'>> & Pick<J, 'status'>,
  ): Promise<boolean> {
    if (Object.values(add).some((n) => n !== 0)) await this.update(job, { add });
    return this.update(job, {
      set: { ...set },
      remove: set.status !== 'running' ? ['gsi1pk', 'gsi1sk'] : [],
      condition: '#status = :running',
      values: { ':running': 'running' },
    });
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
