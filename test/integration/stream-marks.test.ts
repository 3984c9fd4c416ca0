import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeleteCommand } from '../../functions/aws/dynamodb.js';
import { parseTenantConfig } from '../../functions/core/config.js';
import { StreamMovedError } from '../../functions/core/errors.js';
import { Producer } from '../../functions/produce/producer.js';
import { buildServices } from '../../functions/services.js';
import { streamMarkKey } from '../../functions/store/keys.js';
import { DriftCheck } from '../../functions/sweep/drift-check.js';
import { queueApi } from '../helpers/queue-api.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * A queue moved to another stream (its `shards` dropped from the tenant file) must not have the
 * new stream's records read against its old ranges, whose sequence numbers are another stream's:
 * admission refuses them, loses nothing, and the drift check names the move.
 */

const FILE = { tenant: 'marks', queues: { moved: { shards: 1 }, other: {} } };
/** The same file with `moved`'s shards dropped: it would join the shared stream. */
const MOVED = parseTenantConfig({ tenant: 'marks', queues: { moved: {}, other: {} } });
const SHARD = 'shardId-000000000000';

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime(FILE);
});
afterAll(async () => {
  await t?.close();
});

/** The services of a deployment of the moved file over this one's table. */
const movedServices = () => buildServices({ ...t.runtime.config, tenant: MOVED }, t.runtime.clients);

const record = (id: string) => ({
  sequence: '9'.repeat(56),
  envelope: {
    message_id: id,
    queue: 'moved',
    entry: 1,
    attempt: 1,
    produced_at: new Date().toISOString(),
    enqueued_at: new Date().toISOString(),
    payload: { id },
  },
});

describe('a queue moved to another stream', () => {
  it('is refused by admission, and named by the drift check', async () => {
    const api = queueApi(t, 'moved');
    const [sent] = await api.produce([{ payload: { n: 1 } }]);
    const [got] = await api.receiveAll(1, 10_000);
    expect(got?.message_id).toBe(sent?.message_id);
    await api.ack([got?.receipt as string]);

    const moved = movedServices();
    const config = MOVED.queues.moved;
    if (!config) throw new Error('no moved queue');
    // The record would sort after the old ranges here, but a real stream's might not: refused either way.
    await expect(
      moved.admission.admit('moved', config, SHARD, [record('new-1')] as never),
    ).rejects.toBeInstanceOf(StreamMovedError);
    // Produce refuses it before it appends: nothing is accepted onto a stream the queue will not read.
    await expect(
      new Producer(moved).produce('moved', config, [{ payload: { n: 2 }, delay_seconds: 0 }]),
    ).rejects.toMatchObject({
      code: 'STREAM_MOVED',
      status: 409,
    });
    const onShared = await moved.reader.after('leaseq-marks_shared', SHARD, undefined, 1000);
    expect(onShared.filter((r) => Buffer.from(r.data).includes('"queue":"moved"'))).toEqual([]);
    // Nothing was written for it: the queue's last range is still the old stream's.
    expect((await moved.ranges.head('moved', SHARD))?.last).not.toBe('9'.repeat(56));

    const drift = new DriftCheck({
      tenant: MOVED,
      kinesis: t.runtime.clients.kinesis,
      doc: t.runtime.clients.doc,
      table: t.runtime.config.tableName,
      streamMarks: moved.streamMarks,
      logger: new Logger({ logLevel: 'SILENT' }),
    });
    expect((await drift.check()).get('moved')).toContainEqual({
      resource: `ranges of shard ${SHARD}`,
      setting: 'stream',
      expected: 'leaseq-marks_shared',
      observed: 'leaseq-marks-moved',
    });
  });

  it('counts ranges admitted before the marks as the queue’s own stream’s', async () => {
    // A queue admitted by an earlier version has ranges and no mark.
    await t.runtime.clients.doc.send(
      new DeleteCommand({ TableName: t.runtime.config.tableName, Key: streamMarkKey('moved', SHARD) }),
    );
    const own = buildServices(t.runtime.config, t.runtime.clients).streamMarks;
    await expect(own.confirm('moved', SHARD, 'leaseq-marks-moved', true)).resolves.toBeUndefined();
    await t.runtime.clients.doc.send(
      new DeleteCommand({ TableName: t.runtime.config.tableName, Key: streamMarkKey('moved', SHARD) }),
    );
    await expect(
      movedServices().streamMarks.confirm('moved', SHARD, 'leaseq-marks_shared', true),
    ).rejects.toThrow(
      /messages are on stream leaseq-marks-moved, and the tenant file now puts it on leaseq-marks_shared/,
    );
    // A shard with no ranges takes whichever stream the file names.
    await expect(
      movedServices().streamMarks.confirm('other', 'shardId-000000000009', 'leaseq-marks_shared', false),
    ).resolves.toBeUndefined();
  });
});
