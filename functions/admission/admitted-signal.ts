/**
 * Wakes long polls waiting in this process when admission writes ranges of their queue, so a
 * receiver sees new work within milliseconds instead of at its next re-read. It helps where
 * admission and receivers share a process: the local runtime. A Lambda instance serves one
 * request at a time, so on AWS nothing waits here and receivers re-read (consume/consumer.ts).
 */
export class AdmittedSignal {
  private readonly waiting = new Map<string, Set<() => void>>();

  /** `entries` new ones: wakes at most that many waiters (the oldest first), not a stampede. */
  notify(queue: string, entries: number): void {
    const waiters = this.waiting.get(queue);
    if (!waiters) return;
    for (const wake of [...waiters].slice(0, Math.max(1, entries))) wake();
  }

  /** Resolves on the queue's next admission or after `ms`, whichever is first. */
  wait(queue: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const waiters = this.waiting.get(queue) ?? new Set();
      this.waiting.set(queue, waiters);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (!waiters.size) this.waiting.delete(queue);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
    });
  }
}

/**
 * The process's one signal: admission and the long polls it wakes are built by different handler
 * factories (dispatch, api) that share only the process. Keys name the table as well as the
 * queue, so runtimes sharing a process (tests) wake only their own receivers.
 */
export const processAdmissions = new AdmittedSignal();
