import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueApi, type Received } from '../helpers/queue-api.js';
import { placesHeld } from '../helpers/queue-items.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { until } from '../helpers/until.js';

/**
 * A queue's receives wait past their first second at most `max_waiting_receives` at once
 * (core/long-polls.ts); past it a receive answers then. What a receive did is told apart by what
 * it answered and when, not by how long it took: a receive that holds a place ends only at its
 * deadline (20 s away) or with a message, and none is produced until every receive has either
 * answered or taken a place.
 */

const MAX = 2;
const POLLS = 5;
let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'places',
    queues: { polled: { shards: 1, max_waiting_receives: MAX }, other: { shards: 1 } },
  });
});
afterAll(async () => {
  await t?.close();
});

const held = (queue: string) => placesHeld(t, queue);

describe('places to wait', () => {
  it('lets at most max_waiting_receives of a queue wait on; the rest answer, and other queues wait', async () => {
    const polled = queueApi(t, 'polled');
    const other = queueApi(t, 'other');
    const answers: (Received[] | undefined)[] = Array.from({ length: POLLS }, () => undefined);
    const polls = answers.map((_, i) =>
      polled.receive({ max_messages: 1, wait_seconds: 20 }).then((got) => {
        answers[i] = got;
      }),
    );
    // Each receive takes a place or answers, empty, long before its deadline.
    await until(async () => answers.filter(Boolean).length + (await held('polled')) === POLLS);
    const early = answers.flatMap((a, i) => (a ? [i] : []));
    expect(early.every((i) => answers[i]?.length === 0)).toBe(true);
    const waiting = POLLS - early.length;
    expect(waiting).toBeGreaterThanOrEqual(1);
    expect(waiting).toBeLessThanOrEqual(MAX);
    expect(await held('polled')).toBe(waiting);

    // Another queue's places are its own: its receive waits, and gets what is produced.
    const otherPoll = other.receive({ max_messages: 1, wait_seconds: 20 });
    await until(async () => (await held('other')) === 1);
    await other.produce([{ message_id: 'o', payload: 1 }]);
    expect((await otherPoll).map((m) => m.message_id)).toEqual(['o']);

    // Each receive that waited gets a message: it was still waiting.
    await polled.produce(Array.from({ length: POLLS }, (_, i) => ({ message_id: `m${i}`, payload: i })));
    await Promise.all(polls);
    const delivered = answers.flatMap((a, i) => (early.includes(i) ? [] : (a ?? [])));
    expect(delivered).toHaveLength(waiting);
    // And their places are given back.
    await until(async () => (await held('polled')) === 0 && (await held('other')) === 0);
  });
});
