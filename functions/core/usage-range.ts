import { InvalidRangeError } from './errors.js';

/**
 * The ranges GET /usage answers for: checked by the route itself, so a refusal is the api's typed
 * error, while the usage is computed in a file loaded on first ask (operations/usage.ts).
 */

const DAY_MS = 86_400_000;

/** The longest range one answer covers: a quarter's bill. */
export const MAX_USAGE_DAYS = 93;

/**
 * A range's ends as epoch ms, refused when reversed, too long, or starting in the future. One older
 * than the rollups kept (USAGE_RETENTION_DAYS) is answered from the oldest kept: `sampled_from` says.
 */
export function usageRange(from: string, to: string, now: number): { from: number; to: number } {
  const start = Date.parse(from);
  const end = Date.parse(to);
  if (!(start < end)) throw new InvalidRangeError(`from (${from}) must be before to (${to})`);
  if (end - start > MAX_USAGE_DAYS * DAY_MS)
    throw new InvalidRangeError(`a usage range is at most ${MAX_USAGE_DAYS} days`, {
      max_days: MAX_USAGE_DAYS,
    });
  if (start >= now) throw new InvalidRangeError(`from (${from}) is in the future`);
  return { from: start, to: end };
}
