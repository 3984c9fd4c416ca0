import { mapLimit } from '../core/async.js';
import type { QueueConfig } from '../core/config.js';
import { matchesFilter, needsHistory, type RedriveFilterSpec } from '../core/redrive-policy.js';
import { deadLetterExpiry } from '../core/retention.js';
import type { KeyOrder } from '../delivery/key-order.js';
import type { Requeue } from '../delivery/requeue.js';
import type { RedriveJob } from '../store/jobs.js';
import type { KeyStates } from '../store/key-states.js';
import { gsi } from '../store/keys.js';
import type { MessageStore, StateItem } from '../store/messages.js';
import type { StorageMeter } from '../store/storage.js';
import { type JobOpening, type JobPass, JobRunner, type JobRunnerDeps } from './job-runner.js';

/**
 * Redrive: a job with a rate and a filter moves dead letters back into the queue through the
 * log, with a fresh attempt count and their history kept. The sweep runs the jobs (JobRunner).
 * `queue` may be a Lambda consumer's namespace: its dead letters go back to that consumer only.
 */

export interface RedriveDeps extends JobRunnerDeps<RedriveJob> {
  messages: MessageStore;
  keys: KeyStates;
  keyOrder: KeyOrder;
  requeue: Requeue;
  storage: Pick<StorageMeter, 'leftDlq'>;
}

export interface RedriveRequest {
  rate_per_sec: number;
  filter: RedriveFilterSpec;
}

export interface RedriveView {
  redrive_id: string;
  status: RedriveJob['status'];
  moved: number;
  remaining: number;
  rate_per_sec: number;
}

const PAGE = 50;

export class Redrives extends JobRunner<RedriveJob, RedriveRequest, RedriveView, RedriveDeps> {
  protected readonly noun = 'redrive';

  /** How many dead letters a redrive with `filter` would take now. */
  matching(queue: string, filter: RedriveFilterSpec): Promise<number> {
    return this.countMatching(queue, filter, this.now());
  }

  protected async open(
    queue: string,
    _config: QueueConfig,
    request: RedriveRequest,
    id: string,
    now: number,
  ): Promise<JobOpening<RedriveJob>> {
    // Counted up front, so progress can say what is left.
    const remaining = await this.countMatching(queue, request.filter, now);
    return {
      fields: { redrive_id: id, filter: request.filter, moved: 0, remaining, dead_until: now },
      empty: remaining === 0,
      detail: { filter: request.filter, rate_per_sec: request.rate_per_sec, matching: remaining },
    };
  }

  protected view(job: RedriveJob): RedriveView {
    return {
      redrive_id: job.redrive_id,
      status: job.status,
      moved: job.moved,
      remaining: job.remaining,
      rate_per_sec: job.rate_per_sec,
    };
  }

  protected async pass(
    queue: string,
    config: QueueConfig,
    job: RedriveJob,
    take: number,
    now: number,
  ): Promise<JobPass<RedriveJob>> {
    // The batch of a pass that stopped before it saved what moved: counted now, and traced, as
    // that pass may have stopped before its events.
    const earlierIds = job.pending?.length ? await this.movedOf(queue, job.pending) : [];
    const earlier = earlierIds.length;
    await this.traceMoved(queue, config, earlierIds, 'redriven', job.redrive_id, job.pending_at ?? now);
    // Each examined item with the cursor from before it, so a message that did not move is seen again.
    const examined: { item: StateItem; before: string | undefined; selected: boolean }[] = [];
    let cursor = job.cursor;
    let selected = 0;
    let exhausted = false;
    while (selected < take && !exhausted) {
      const page = await this.deps.messages.partition(gsi.dead(queue), {
        limit: PAGE,
        ...(cursor ? { above: cursor } : {}),
      });
      let filled = false;
      for (const item of page) {
        // Later deaths are not this job's; the index is in dead-time order.
        if ((item.dead_at ?? 0) > job.dead_until) {
          exhausted = true;
          break;
        }
        const match = await this.matches(queue, item, job.filter);
        examined.push({ item, before: cursor, selected: match });
        cursor = (item as StateItem & { gsi1sk: string }).gsi1sk;
        if (match && ++selected >= take) {
          filled = true;
          break;
        }
      }
      if (!filled && page.length < PAGE) exhausted = true;
    }
    const batch = examined.filter((e) => e.selected).map((e) => e.item);
    // Saved before it moves, with what the last batch moved: the job's counts stay exact whatever
    // stops the pass.
    if (batch.length || job.pending) {
      const going = await this.deps.jobs.progress(job, {
        add: { moved: earlier, remaining: -earlier },
        set: {
          status: 'running',
          pending: batch.map((item) => ({ id: item.message_id, entry: item.entry })),
          pending_at: now,
        },
      });
      if (!going) return { counted: earlier };
    }
    const landed = batch.length
      ? await this.redriveBatch(queue, config, batch, job.redrive_id, now)
      : new Set<string>();
    const missed = examined.find((e) => e.selected && !landed.has(e.item.message_id));
    if (missed) {
      cursor = missed.before;
      exhausted = false;
    }
    const moved = landed.size;
    const remaining = Math.max(0, job.remaining - earlier - moved);
    return {
      counted: earlier + moved,
      progress: {
        moved,
        add: { moved, remaining: -moved },
        set: cursor ? { cursor } : {},
        remove: ['pending', 'pending_at'],
        done: exhausted || remaining === 0,
      },
    };
  }

  /** Which of a saved batch moved: their items left the DLQ with their next entry. */
  private async movedOf(queue: string, pending: readonly { id: string; entry: number }[]): Promise<string[]> {
    const items = await this.deps.messages.getMany(
      queue,
      pending.map((p) => p.id),
      true,
    );
    return pending
      .filter((p) => {
        const item = items.get(p.id);
        return item !== undefined && item.state !== 'dead' && item.entry > p.entry;
      })
      .map((p) => p.id);
  }

  private async matches(queue: string, item: StateItem, filter: RedriveFilterSpec): Promise<boolean> {
    const errors = needsHistory(filter)
      ? (await this.deps.messages.history(queue, item.message_id, item)).flatMap((h) =>
          h.error ? [h.error] : [],
        )
      : [];
    return matchesFilter({ message_id: item.message_id, dead_at: item.dead_at ?? 0, errors }, filter);
  }

  private async countMatching(queue: string, filter: RedriveFilterSpec, now: number): Promise<number> {
    let count = 0;
    for await (const item of this.deps.messages.partitionAll(gsi.dead(queue)))
      if ((item.dead_at ?? 0) <= now && (await this.matches(queue, item, filter))) count++;
    return count;
  }

  /**
   * Dead letters back into the log as their next entry, attempt 1, in one append (a consumer's
   * marked `for` it). On an ordered queue a key parked by one of them is released afterwards,
   * with that message holding it so it goes first: released before, the key's held messages
   * could meet a holder still dead and park it again. Answers the ids that landed.
   */
  private async redriveBatch(
    queue: string,
    config: QueueConfig,
    items: StateItem[],
    redriveId: string,
    now: number,
  ): Promise<Set<string>> {
    const landed = await this.deps.requeue.reappend(queue, items, 'dead', now);
    // Their bytes stay held (until acked), no longer as dead letters that expire.
    await mapLimit(landed, 16, (item) =>
      this.deps.storage.leftDlq(queue, item.bytes ?? 0, deadLetterExpiry(item, config)),
    );
    const ids = landed.map((item) => item.message_id);
    await this.traceMoved(queue, config, ids, 'redriven', redriveId, now);
    if (config.ordered) await this.releaseKeys(queue, landed);
    return new Set(ids);
  }

  private async releaseKeys(queue: string, items: StateItem[]): Promise<void> {
    const keyed = items.filter((item) => item.key !== undefined);
    if (!keyed.length) return;
    const states = await this.deps.keys.getMany(
      queue,
      keyed.map((item) => item.key as string),
    );
    for (const item of keyed) {
      const state = states.get(item.key as string);
      if (state?.parked_at !== undefined && state.dead_message_id === item.message_id) {
        await this.deps.keyOrder.unpark(queue, state, item.message_id);
      }
    }
  }
}
