import type { FailureReason } from './retry-policy.js';

/**
 * Dead letters grouped by how their last attempt failed: a full DLQ's first question is "one bug
 * or many". An attempt without an error text is grouped by its reason.
 */

export interface DeadFacts {
  message_id: string;
  dead_at: number;
  /** The last failed attempt's error text, if the consumer gave one. */
  error?: string;
  reason: FailureReason;
}

export interface DeadLetterGroup {
  /** The last attempt's error text, or the reason in parentheses when it had none. */
  error: string;
  count: number;
  first_dead_at: number;
  last_dead_at: number;
  /** One of the group's messages, to open. */
  sample_message_id: string;
}

/** Longest error text a group is named by: longer ones are grouped by their start. */
export const GROUP_ERROR_CHARS = 200;

export function groupByError(dead: Iterable<DeadFacts>): DeadLetterGroup[] {
  const groups = new Map<string, DeadLetterGroup>();
  for (const d of dead) {
    const error = d.error?.trim() ? d.error.trim().slice(0, GROUP_ERROR_CHARS) : `(${d.reason})`;
    const group = groups.get(error);
    if (!group) {
      groups.set(error, {
        error,
        count: 1,
        first_dead_at: d.dead_at,
        last_dead_at: d.dead_at,
        sample_message_id: d.message_id,
      });
      continue;
    }
    group.count++;
    group.first_dead_at = Math.min(group.first_dead_at, d.dead_at);
    group.last_dead_at = Math.max(group.last_dead_at, d.dead_at);
  }
  return [...groups.values()].sort((a, b) => b.count - a.count || b.last_dead_at - a.last_dead_at);
}
