import type { Envelope } from './envelope.js';
import { InvalidRequestError, OutsideRetentionError } from './errors.js';

/**
 * Replay rules (docs/operations.md, "Replay by time"): which records of the log a replay takes,
 * the window it may ask for, and what its copy of a message is.
 */

export interface ReplayFilterSpec {
  message_ids?: string[];
  keys?: string[];
}

/**
 * How far inside the retention a window must start: the job reads the oldest shard first, and
 * a record Kinesis trims before the job reaches it cannot be replayed.
 */
export const RETENTION_MARGIN_MS = 5 * 60_000;

/** The window as the job runs it: `to` no later than now (what is accepted later is not this replay's). */
export function replayWindow(
  request: { from: string; to?: string | undefined },
  retentionHours: number,
  now: number,
): { from: number; to: number } {
  const from = Date.parse(request.from);
  const to = Math.min(request.to !== undefined ? Date.parse(request.to) : now, now);
  const oldest = now - retentionHours * 3_600_000 + RETENTION_MARGIN_MS;
  if (from < oldest)
    throw new OutsideRetentionError(
      `the log keeps ${retentionHours} h: a replay can start from ${new Date(oldest).toISOString()} at the earliest`,
      new Date(oldest).toISOString(),
    );
  if (from >= to) throw new InvalidRequestError('from must be before to, and before now');
  return { from, to };
}

/**
 * Whether a record is a message the producer's request accepted in the window: its first entry,
 * not a retry, a wake, or an earlier replay's copy (those are the same message again).
 */
export function isReplayable(
  env: Envelope,
  arrivedAt: number,
  window: { from: number; to: number },
  filter: ReplayFilterSpec,
): boolean {
  if (env.entry !== 1 || env.wake || env.replay !== undefined || env.from || env.for !== undefined)
    return false;
  if (arrivedAt < window.from || arrivedAt > window.to) return false;
  if (filter.message_ids?.length && !filter.message_ids.includes(env.message_id)) return false;
  if (filter.keys?.length && (env.key === undefined || !filter.keys.includes(env.key))) return false;
  return true;
}

/**
 * A replayed message's new entry: a new life of its id (produced now, attempt 1, due now), for
 * one Lambda consumer when the replay is that consumer's. Admission takes one copy per replay
 * (`admissionId`), so a copy appended twice (a crash before the job saved its place) is one.
 */
export function replayCopy(original: Envelope, replayId: string, now: number, consumer?: string): Envelope {
  const { deliver_after: _due, server_id: _server, for: _for, ...rest } = original;
  const at = new Date(now).toISOString();
  return {
    ...rest,
    produced_at: at,
    enqueued_at: at,
    attempt: 1,
    entry: 1,
    replay: replayId,
    ...(consumer !== undefined ? { for: consumer } : {}),
  };
}

/**
 * The id under which admission records which copy of a first entry it took: the producer's id
 * (its dedup record), or per replay for a replay's copy; undefined for an id the server assigned,
 * which was appended once and is taken as it is.
 */
export function admissionId(env: Envelope): string | undefined {
  if (env.replay !== undefined) return copyAdmissionId(env.message_id, env.replay);
  return env.server_id ? undefined : env.message_id;
}

/** The id under which admission records the copy of `messageId` it took for a replay. */
export function copyAdmissionId(messageId: string, replayId: string): string {
  return `${messageId}#replay#${replayId}`;
}

/** Produce writes a copy's dedup record right after its append: well within this of its request. */
const PRODUCER_MARKS_WITHIN_MS = 1000;

/**
 * Until when a first entry's producer is likely still writing its dedup record (admission waits
 * a moment for it rather than claim the copy); undefined when no producer writes one (a replay's
 * copy, an id the server assigned).
 */
export function producerMarksBy(env: Envelope): number | undefined {
  if (env.replay !== undefined || env.server_id || env.entry !== 1) return undefined;
  return Date.parse(env.enqueued_at) + PRODUCER_MARKS_WITHIN_MS;
}
