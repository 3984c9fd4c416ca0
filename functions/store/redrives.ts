import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { buildKeyCondition, buildUpdate } from './expression.js';
import { GSI1, gsi, redriveKey } from './keys.js';
import { isConditionFailed } from './util.js';

/** Redrive jobs: one item each, in the `redrives` index while running. */

export interface RedriveFilter {
  message_ids?: string[];
  error_contains?: string;
  dead_after?: string;
  dead_before?: string;
}

export type RedriveStatus = 'running' | 'done' | 'cancelled';

export interface RedriveJob {
  redrive_id: string;
  queue: string;
  status: RedriveStatus;
  rate_per_sec: number;
  filter: RedriveFilter;
  moved: number;
  remaining: number;
  created_at: number;
  created_by: string;
  /** Only messages dead by then: a message that dies again after its redrive is not taken twice. */
  dead_until: number;
  /** The DLQ index position already examined. */
  cursor?: string;
  /** Token bucket of the job's rate. */
  credit: number;
  last_run_at: number;
}

export class RedriveJobs {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async create(job: RedriveJob): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          ...redriveKey(job.queue, job.redrive_id),
          ...job,
          ...(job.status === 'running' ? { gsi1pk: gsi.redrives(job.queue), gsi1sk: job.redrive_id } : {}),
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  async get(queue: string, id: string): Promise<RedriveJob | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: redriveKey(queue, id), ConsistentRead: true }),
    );
    return out.Item as RedriveJob | undefined;
  }

  async running(queue: string): Promise<RedriveJob[]> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: GSI1,
        ...buildKeyCondition('#gsi1pk = :pk', { ':pk': gsi.redrives(queue) }),
      }),
    );
    return (out.Items ?? []) as RedriveJob[];
  }

  /**
   * Saves a pass's progress. What moved is counted whatever happened meanwhile (a cancel
   * during the pass must not hide messages that did move); the rest only while running.
   */
  async progress(
    job: RedriveJob,
    update: { moved: number } & Pick<RedriveJob, 'credit' | 'last_run_at' | 'status'> & { cursor?: string },
  ): Promise<boolean> {
    const { moved, ...rest } = update;
    if (moved > 0) await this.update(job, { add: { moved, remaining: -moved } });
    return this.update(job, {
      set: { ...rest },
      remove: rest.status !== 'running' ? ['gsi1pk', 'gsi1sk'] : [],
      condition: '#status = :running',
      values: { ':running': 'running' },
    });
  }

  cancel(job: RedriveJob): Promise<boolean> {
    return this.update(job, {
      set: { status: 'cancelled' },
      remove: ['gsi1pk', 'gsi1sk'],
      condition: '#status = :running',
      values: { ':running': 'running' },
    });
  }

  private async update(job: RedriveJob, spec: Parameters<typeof buildUpdate>[0]): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: redriveKey(job.queue, job.redrive_id),
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
