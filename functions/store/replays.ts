import type { DocumentClient } from '../aws/dynamodb.js';
import type { ReplayFilterSpec } from '../core/replay-policy.js';
import { type Job, JobStore } from './jobs.js';
import { gsi, replayKey } from './keys.js';

/** Replay jobs (operations/replay.ts). */

export interface ReplayJob extends Job {
  replay_id: string;
  rate_per_sec: number;
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
  created_at: number;
  created_by: string;
  /** Token bucket of the job's rate. */
  credit: number;
  last_run_at: number;
}

export type ReplayJobs = JobStore<ReplayJob>;

export function replayJobs(doc: DocumentClient, table: string): ReplayJobs {
  return new JobStore<ReplayJob>(doc, table, {
    noun: 'replay',
    key: replayKey,
    running: gsi.replays,
    id: (job) => job.replay_id,
  });
}
