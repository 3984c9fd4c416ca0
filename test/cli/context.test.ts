import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { sleep } from '../../cli/context.js';

describe("the CLI's sleep", () => {
  // `--follow` and `--watch` poll with one signal for their whole run: a listener left per poll
  // printed MaxListenersExceededWarning into the progress bar after ten polls.
  it('leaves no listener on the signal once it has slept, however often it is called', async () => {
    const stop = new AbortController();
    for (let i = 0; i < 20; i++) await sleep(1, stop.signal);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });

  it('ends at once when the signal aborts', async () => {
    const stop = new AbortController();
    const started = Date.now();
    const slept = sleep(60_000, stop.signal);
    stop.abort();
    await slept;
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
