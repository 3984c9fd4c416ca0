import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../functions/core/envelope.js';
import { buildServices } from '../../functions/services.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * A held message sent back through the log by its key's release (append first, then mark it
 * `requeued`) can be read back by its consumer before the mark lands. Its next entry must be
 * admitted then too: passed over as a duplicate, the message stayed held for good while the
 * mark made it look requeued (found by the fault run, an ordered queue with a Lambda consumer).
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({ tenant: 'held', queues: { jobs: { shards: 1 } } });
});
afterAll(async () => {
  await t?.close();
});

describe('a held message released through the log', () => {
  it('has its next entry admitted whether or not the release marked it requeued yet', async () => {
    const { messages } = buildServices(t.runtime.config, t.runtime.clients);
    const at = new Date().toISOString();
    const envelope: Envelope = {
      v: 1,
      message_id: 'h-1',
      queue: 'ghost~consumer',
      key: 'k',
      produced_at: at,
      enqueued_at: at,
      attempt: 1,
      entry: 1,
      payload: 1,
    };
    const now = Date.now();
    const held = await messages.admit('shardId-000000000000', '100', envelope, now, 0, { held: true });
    expect(held.result).toBe('held');
    // The release appended entry 2; the consumer reads it back before the `requeued` mark.
    const next = await messages.admit('shardId-000000000000', '200', { ...envelope, entry: 2 }, now, 0);
    expect(next.result).toBe('admitted');
    expect(next.item?.state).toBe('ready');
    // The late mark then finds nothing to retire, and a second copy of entry 2 is still one.
    await messages.markRequeued('ghost~consumer', 'h-1', 1, 'held');
    expect((await messages.get('ghost~consumer', 'h-1'))?.state).toBe('ready');
    expect(
      (await messages.admit('shardId-000000000000', '300', { ...envelope, entry: 2 }, now, 0)).result,
    ).toBe('duplicate');
  });
});
