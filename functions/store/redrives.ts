import type { DocumentClient } from '../aws/dynamodb.js';
import type { RedriveFilterSpec } from '../core/redrive-policy.js';
import { type Job, JobStore } from './jobs.js';
import { gsi, redriveKey } from './keys.js';

/** Redrive jobs (operations/redrive.ts). */

export interface RedriveJob extends Job {
  redrive_id: string;
  rate_per_sec: number;
  filter: RedriveFilterSpec;
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
  /**
   * The batch a pass is moving, saved before it moves: a pass that stops before it saves what
   * moved leaves the next one to count it (a moved message's entry is past the one named here).
   */
  pending?: { id: string; entry: number }[];
}

export type RedriveJobs = JobStore<RedriveJob>;

export function redriveJobs(doc: DocumentClient, table: string): RedriveJobs {
  return new JobStore<RedriveJob>(doc, table, {
    noun: 'redrive',
    key: redriveKey,
    running: gsi.redrives,
    id: (job) => job.redrive_id,
  });
}
