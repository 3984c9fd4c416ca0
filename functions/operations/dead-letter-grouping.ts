import type { QueueConfig } from '../core/config.js';
import { type DeadFacts, groupByError } from '../core/dead-letter-groups.js';
import { deadLetterLive } from '../core/retention.js';
import { gsi } from '../store/keys.js';
import type { MessageStore } from '../store/messages.js';
import { iso } from './views.js';

/** Dead letters read for grouping at most: a page of the index at a time, oldest first. */
export const GROUPED_AT_MOST = 10_000;
const PAGE = 500;

export interface GroupingDeps {
  messages: Pick<MessageStore, 'page'>;
  now?: () => number;
}

/**
 * A queue's dead letters grouped by their last error (core/dead-letter-groups.ts), read from the
 * DLQ's index alone: a dead letter's item carries its attempts' history, so no further read is
 * needed. Up to GROUPED_AT_MOST of them, the oldest; `truncated` says when there were more.
 */
export async function deadLetterGroups(deps: GroupingDeps, queue: string, config: QueueConfig) {
  const now = deps.now?.() ?? Date.now();
  const dead: DeadFacts[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.messages.page(gsi.dead(queue), PAGE, start);
    for (const item of page.items) {
      if (!deadLetterLive(item, config, now)) continue;
      const last = item.hist?.at(-1);
      dead.push({
        message_id: item.message_id,
        dead_at: item.dead_at ?? 0,
        reason: last?.reason ?? item.dead_reason ?? 'nack',
        ...(last?.error !== undefined ? { error: last.error } : {}),
      });
    }
    start = page.last;
  } while (start && dead.length < GROUPED_AT_MOST);
  return {
    groups: groupByError(dead).map((g) => ({
      ...g,
      first_dead_at: iso(g.first_dead_at),
      last_dead_at: iso(g.last_dead_at),
    })),
    grouped: dead.length,
    truncated: start !== undefined,
  };
}
