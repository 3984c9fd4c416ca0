import { type At, type EndState, groupBy, type Invariant, invariant, timeIn } from './checks.js';
import { type Delivery, type History, lifeOf } from './history.js';
import type { JobsEnd } from './jobs.js';

/**
 * The invariants of the operator's jobs a run started (jobs.ts), on its history and the jobs'
 * final views: each job's count is exact, and a replay's copies are told apart from the
 * messages they copy by their `replay_id` on every delivery.
 */

export function checkJobs(history: History, end: EndState, jobs: JobsEnd): Invariant[] {
  const at = timeIn(history);
  const byLife = groupBy(history.deliveries, (d) => d.life);
  return [
    redriveCounts(history, end, jobs, byLife, at),
    replayCounts(history, jobs),
    replayIdCarried(history, at),
  ];
}

/**
 * A redrive moved exactly the dead letters it took from the DLQ: `moved` is the number whose
 * trace has its `redriven` event and what it counted to move at its start; it took every dead
 * letter listed before its start and nothing not listed right after; each was delivered again
 * after its start (or dead again later, on the push queue handled); and nothing is left to move.
 */
function redriveCounts(
  history: History,
  end: EndState,
  jobs: JobsEnd,
  byLife: Map<string, Delivery[]>,
  at: At,
): Invariant {
  const violations: string[] = [];
  for (const r of history.jobs.redrives) {
    const job = jobs.redrives.get(r.redriveId);
    const name = `redrive ${r.redriveId} of ${r.queue}`;
    if (!job) {
      violations.push(`${name}: no final view`);
      continue;
    }
    if (job.status !== 'done') violations.push(`${name}: ${job.status} at the end, not done`);
    if (job.moved !== job.taken.size)
      violations.push(`${name}: moved ${job.moved}, but ${job.taken.size} dead letters were redriven by it`);
    if (job.moved !== r.remainingAtStart)
      violations.push(`${name}: moved ${job.moved} of the ${r.remainingAtStart} it counted at its start`);
    if (job.remaining !== 0) violations.push(`${name}: ${job.remaining} left to move at the end`);
    for (const life of r.deadBefore.keys())
      if (!job.taken.has(life)) violations.push(`${name}: ${life}, dead before its start, not taken`);
    for (const life of job.taken) {
      // Listed before or right after the start: a pass may move a letter before the listing after.
      if (!r.deadAfter.has(life) && !r.deadBefore.has(life))
        violations.push(`${name}: took ${life}, not in the DLQ at its start`);
      const again = (byLife.get(life) ?? []).some((d) => d.receivedAt > r.requestedAt);
      const diedAgain = (end.dead.get(life) ?? 0) > r.requestedAt;
      if (!again && !diedAgain && !end.handled.has(life))
        violations.push(
          `${name}: ${life} redriven but never delivered again (requested ${at(r.requestedAt)})`,
        );
    }
  }
  return invariant('a redrive moves exactly the dead letters it took, each once', violations);
}

/** A replay appended exactly one copy of each message it was asked for, and none of another. */
function replayCounts(history: History, jobs: JobsEnd): Invariant {
  const violations: string[] = [];
  for (const r of history.jobs.replays) {
    const job = jobs.replays.get(r.replayId);
    const name = `replay ${r.replayId} of ${r.queue}`;
    if (!job) {
      violations.push(`${name}: no final view`);
      continue;
    }
    if (job.status !== 'done') violations.push(`${name}: ${job.status} at the end, not done`);
    if (job.replayed !== r.ids.length)
      violations.push(`${name}: replayed ${job.replayed} copies of the ${r.ids.length} messages asked for`);
    const asked = new Set(r.ids);
    const strays = new Set(
      history.deliveries.filter((d) => d.replayId === r.replayId && !asked.has(d.id)).map((d) => d.id),
    );
    for (const id of strays)
      violations.push(`${name}: delivered a copy of ${id}, which it was not asked for`);
  }
  return invariant('a replay copies exactly the messages of its window and filter, each once', violations);
}

/**
 * Every delivery of a replay's copy carries its `replay_id`, its retries and redrives too: a
 * message the replay was asked for (all acked before it started) delivered after the replay's
 * start without one is a copy that lost it; a `replay_id` no replay of the run has is made up.
 */
function replayIdCarried(history: History, at: At): Invariant {
  const violations: string[] = [];
  const started = new Set(history.jobs.replays.map((r) => r.replayId));
  for (const d of history.deliveries)
    if (d.replayId !== undefined && !started.has(d.replayId))
      violations.push(`${d.id}: delivered ${at(d.receivedAt)} with replay_id ${d.replayId}, of no replay`);
  for (const r of history.jobs.replays) {
    const asked = new Set(r.ids);
    for (const d of history.deliveries) {
      if (
        d.queue !== r.queue ||
        !asked.has(d.id) ||
        d.replayId !== undefined ||
        d.receivedAt <= r.requestedAt
      )
        continue;
      violations.push(
        `${d.id}: attempt ${d.attempt} delivered ${at(d.receivedAt)} without replay_id, after replay ${r.replayId} ` +
          `(${at(r.requestedAt)}) of it, acked before`,
      );
    }
    const copies = history.deliveries.filter((d) => d.life === lifeOf(d.id, r.replayId));
    if (r.ids.length && !copies.length) violations.push(`replay ${r.replayId}: no copy delivered at all`);
  }
  return invariant('every delivery of a replayed message carries its replay_id', violations);
}
