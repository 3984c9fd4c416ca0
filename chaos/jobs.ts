import { setTimeout as sleep } from 'node:timers/promises';
import type { AdminApi } from './admin.js';
import { confirmedAck, groupBy } from './checks.js';
import type { History } from './history.js';

/**
 * The operator's jobs a chaos run starts while its workload and disruption go on: a replay of
 * messages of a queue already acked (an incident's "run these again"), then a redrive of the
 * queue's DLQ, which by then may hold dead-lettered replay copies too. The history records what
 * each was asked and what the DLQ held around the redrive's start; job-checks.ts checks the counts.
 */

export interface JobsOptions {
  admin: AdminApi;
  history: History;
  queue: string;
  log: (line: string) => void;
}

/** Where in the workload each job starts: the replay early, the redrive once dead letters piled up. */
const REPLAY_AT = 0.3;
const REDRIVE_AT = 0.6;
/** Fast enough to finish within a short run, slow enough to take several of the sweep's passes. */
const REPLAY_RATE = 20;
const REDRIVE_RATE = 5;
/** The replay's window starts well before the run, and its filter is at most the API's 1,000 ids. */
const WINDOW_LEAD_MS = 60_000;
const MAX_IDS = 1000;
const POLL_MS = 1000;

/** Each job's final view, as the API answers it, beside the count the run expects of it. */
export interface JobsEnd {
  redrives: Map<
    string,
    {
      status: string;
      moved: number;
      remaining: number;
      /** What it counted to move at its start; the DLQ listed before and right after its start. */
      expected: number;
      listed: { before: number; after: number };
      taken: Set<string>;
    }
  >;
  replays: Map<string, { status: string; replayed: number; scanned: number; expected: number }>;
}

export class OperatorJobs {
  constructor(private readonly o: JobsOptions) {}

  /** Starts the replay and then the redrive at their moments of the workload [begin, until). */
  async run(begin: number, until: number): Promise<void> {
    const at = (share: number) => begin + (until - begin) * share;
    await sleep(Math.max(0, at(REPLAY_AT) - Date.now()));
    await this.replay();
    await sleep(Math.max(0, at(REDRIVE_AT) - Date.now()));
    await this.redrive();
  }

  /** Waits until every job started is done (or `deadline`); answers whether they all are. */
  async finished(deadline: number): Promise<boolean> {
    for (;;) {
      const end = await this.end();
      const all = [...end.redrives.values(), ...end.replays.values()];
      if (all.every((j) => j.status !== 'running')) return true;
      if (Date.now() > deadline) return false;
      await sleep(POLL_MS);
    }
  }

  /**
   * Each job's final view, and for a redrive the dead letters it took: those the DLQ held around
   * its start whose trace has its `redriven` event.
   */
  async end(): Promise<JobsEnd> {
    const { admin, history } = this.o;
    const end: JobsEnd = { redrives: new Map(), replays: new Map() };
    for (const r of history.jobs.replays)
      end.replays.set(r.replayId, { ...(await admin.replay(r.queue, r.replayId)), expected: r.ids.length });
    for (const r of history.jobs.redrives) {
      const view = await admin.redrive(r.queue, r.redriveId);
      const taken = new Set<string>();
      for (const life of new Set([...r.deadBefore.keys(), ...r.deadAfter.keys()])) {
        const id = life.split('#replay#')[0] as string;
        const { events } = await admin.trace(r.queue, id);
        if (events.some((e) => e.event === 'redriven' && e.detail.redrive_id === r.redriveId))
          taken.add(life);
      }
      end.redrives.set(r.redriveId, {
        ...view,
        expected: r.remainingAtStart,
        listed: { before: r.deadBefore.size, after: r.deadAfter.size },
        taken,
      });
    }
    return end;
  }

  private async replay(): Promise<void> {
    const { admin, history, queue, log } = this.o;
    const byLife = groupBy(history.deliveries, (d) => d.life);
    const acked = [...history.produced.values()]
      .filter((p) => p.queue === queue && confirmedAck(byLife.get(p.id)))
      .map((p) => p.id)
      .slice(0, MAX_IDS);
    if (!acked.length) {
      log(`replay: nothing acked on ${queue} yet`);
      return;
    }
    history.mark('replay');
    const requestedAt = Date.now();
    const view = await admin.startReplay(queue, history.startedAt - WINDOW_LEAD_MS, acked, REPLAY_RATE);
    history.jobs.replays.push({ queue, replayId: view.replay_id, requestedAt, ids: acked });
    log(`replay ${view.replay_id} of ${acked.length} acked messages of ${queue}`);
  }

  private async redrive(): Promise<void> {
    const { admin, history, queue, log } = this.o;
    history.mark('redrive');
    const requestedAt = Date.now();
    const deadBefore = await admin.deadLetters(queue);
    const view = await admin.startRedrive(queue, REDRIVE_RATE);
    const deadAfter = await admin.deadLetters(queue);
    history.jobs.redrives.push({
      queue,
      redriveId: view.redrive_id,
      requestedAt,
      remainingAtStart: view.remaining + view.moved,
      deadBefore,
      deadAfter,
    });
    log(
      `redrive ${view.redrive_id} of ${queue}: ${view.remaining} dead letters (${deadBefore.size} listed before)`,
    );
  }
}
