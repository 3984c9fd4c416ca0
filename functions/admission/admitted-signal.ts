import { type Pick, type Range, shareEntries } from '../core/ranges.js';

/** Wakes one waiter, handing it its share of what the admission wrote. */
type Wake = (share: readonly Pick[]) => void;

/**
 * Wakes long polls waiting in this process when admission writes ranges of their queue, so a
 * receiver sees new work within milliseconds instead of at its next re-read, and hands each one
 * woken its own share of the new entries, as written: it leases them without reading them back (a
 * round trip less; a lease write is conditional, so entries taken meanwhile only lose that write),
 * and receivers woken together do not write for the same entries. It helps where
 * admission and receivers share a process: the local runtime. A Lambda instance serves one
 * request at a time, so on AWS nothing waits here and receivers re-read (consume/consumer.ts).
 */
export class AdmittedSignal {
  /** Per queue, each waiter and how many messages it asks for, oldest first. */
  private readonly waiting = new Map<string, Map<Wake, number>>();
  /** Per queue, admissions notified so far: what a look that ran during one has missed. */
  private readonly admissions = new Map<string, number>();

  /** Taken before a look, passed to `wait` after it: an admission during the look is not missed. */
  seen(queue: string): number {
    return this.admissions.get(queue) ?? 0;
  }

  /**
   * `entries` new ones: wakes the oldest waiters until what they ask for covers them, not a
   * stampede: every extra receiver woken for the same entries races for them and loses a write.
   */
  notify(queue: string, entries: number, ranges: readonly Range[] = []): void {
    this.admissions.set(queue, this.seen(queue) + 1);
    const waiters = this.waiting.get(queue);
    if (!waiters) return;
    let left = Math.max(1, entries);
    const woken: [Wake, number][] = [];
    for (const [wake, wants] of waiters) {
      if (left <= 0) break;
      left -= wants;
      woken.push([wake, wants]);
    }
    const shares = shareEntries(
      ranges,
      woken.map(([, wants]) => wants),
    );
    for (const [i, [wake]] of woken.entries()) wake(shares[i] ?? []);
  }

  /**
   * Resolves on an admission meant for this waiter (it asks for `wants` messages) with its share
   * of the entries written, or after `ms` with none; at once, with none, if one came since `since`
   * (`seen` before its look).
   */
  wait(queue: string, since: number, wants: number, ms: number): Promise<readonly Pick[]> {
    return new Promise((resolve) => {
      if (this.seen(queue) > since) return resolve([]);
      const waiters = this.waiting.get(queue) ?? new Map<Wake, number>();
      this.waiting.set(queue, waiters);
      const done: Wake = (share) => {
        clearTimeout(timer);
        waiters.delete(done);
        if (!waiters.size) this.waiting.delete(queue);
        resolve(share);
      };
      const timer = setTimeout(() => done([]), ms);
      waiters.set(done, Math.max(1, wants));
    });
  }
}

/**
 * The process's one signal: admission and the long polls it wakes are built by different handler
 * factories (dispatch, api) that share only the process. Keys name the table as well as the
 * queue, so runtimes sharing a process (tests) wake only their own receivers.
 */
export const processAdmissions = new AdmittedSignal();
