import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DedupStore } from '../../functions/store/dedup.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * Admission's claim of a producer id's position (DedupStore.claimPositions) beside produce's own
 * record of it: admission waits a moment for a producer that is still writing its record rather
 * than make that write fail, and claims what nobody records.
 */

let t: TestRuntime;
let dedup: DedupStore;
const Q = 'claims';
const WINDOW_SECONDS = 3600;
const SHARD = 'shardId-000000000000';

beforeAll(async () => {
  t = await startTestRuntime({ tenant: 'dedup', queues: { claims: { shards: 1 } } });
  dedup = new DedupStore(t.runtime.clients.doc, t.runtime.config.tableName);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const position = (sequence: string, acceptedAt: number) => ({ shard: SHARD, sequence, acceptedAt });

describe('claiming a producer id at admission', () => {
  it("leaves a copy to its producer who records it meanwhile: the producer's write is the one", async () => {
    // A wait far past a write's time here, so the producer's write lands inside it on a loaded machine too.
    const patient = new DedupStore(t.runtime.clients.doc, t.runtime.config.tableName, 3000);
    const now = Date.now();
    const claim = patient.claimPositions(
      Q,
      [{ messageId: 'marking', record: position('100', now), markedBy: now + 1000 }],
      WINDOW_SECONDS,
    );
    await new Promise((r) => setTimeout(r, 20));
    // Produce records its append as accepted; had admission claimed first, this write would fail.
    expect(await dedup.markAccepted(Q, 'marking', position('100', now - 5), WINDOW_SECONDS)).toBe(true);
    expect(await claim).toEqual([true]);
    expect((await dedup.get(Q, 'marking', now, true))?.acceptedAt).toBe(now - 5);
  });

  it('claims a copy whose producer does not record it in that moment', async () => {
    const now = Date.now();
    const [claimed] = await dedup.claimPositions(
      Q,
      [{ messageId: 'crashed', record: position('200', now), markedBy: now + 1000 }],
      WINDOW_SECONDS,
    );
    expect(claimed).toBe(true);
    expect((await dedup.get(Q, 'crashed', now, true))?.sequence).toBe('200');
  });

  it('claims a copy no producer writes a record for (a replay, or one its producer wrote long ago)', async () => {
    const now = Date.now();
    const [claimed] = await dedup.claimPositions(
      Q,
      [{ messageId: 'old', record: position('300', now), markedBy: now - 1 }],
      WINDOW_SECONDS,
    );
    expect(claimed).toBe(true);
    expect((await dedup.get(Q, 'old', now, true))?.acceptedAt).toBe(now);
  });
});
