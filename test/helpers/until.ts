import { sleep } from '../../functions/core/async.js';

/** Waits until `check` holds, looking every 50 ms; fails the test after `timeoutMs`. */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not true after ${timeoutMs} ms`);
    await sleep(50);
  }
}
