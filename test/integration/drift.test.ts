import { Logger } from '@aws-lambda-powertools/logger';
import { DecreaseStreamRetentionPeriodCommand } from '@aws-sdk/client-kinesis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownStreamName } from '../../functions/core/config.js';
import { buildServices } from '../../functions/services.js';
import { DriftCheck } from '../../functions/sweep/drift-check.js';
import { createAdminClients } from '../../infra/local/admin-clients.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { gaugedSweep } from '../helpers/gauged-sweep.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The drift check against the emulators: kinesalite keeps a stream's retention, while DynamoDB's
 * emulators keep neither backups nor deletion protection, so a lowered stream retention is what is
 * tested here; the table's rules are the unit test's (test/unit/drift.test.ts).
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime({
    tenant: 'drift',
    queues: { kept: { shards: 1, retention_hours: 48 }, lowered: { shards: 1, retention_hours: 48 } },
  });
});
afterAll(async () => {
  await t?.close();
});

const driftCheck = (now?: () => number) =>
  new DriftCheck({
    tenant: t.runtime.config.tenant,
    kinesis: t.runtime.clients.kinesis,
    doc: t.runtime.clients.doc,
    table: t.runtime.config.tableName,
    streamMarks: buildServices(t.runtime.config, t.runtime.clients).streamMarks,
    logger: new Logger({ logLevel: 'SILENT' }),
    ...(now ? { now } : {}),
  });
const check = () => driftCheck().check();

describe('the drift check', () => {
  it("finds nothing where the stack's settings hold, then a stream whose retention was lowered by hand, in its gauge", async () => {
    expect([...(await check()).values()].flat()).toEqual([]);
    // One instance reads the settings back once an hour, and answers its last reading between.
    let clock = Date.now();
    const hourly = driftCheck(() => clock);
    expect([...(await hourly.check()).values()].flat()).toEqual([]);
    const admin = createAdminClients(t.runtime.endpoints);
    await admin.kinesis.send(
      new DecreaseStreamRetentionPeriodCommand({
        StreamName: ownStreamName('drift', 'lowered'),
        RetentionPeriodHours: 24,
      }),
    );
    expect([...(await hourly.check()).values()].flat()).toEqual([]);
    clock += 3_600_000;
    expect((await hourly.check()).get('lowered')).toHaveLength(1);
    const found = await check();
    expect(found.get('kept')).toEqual([]);
    expect(found.get('lowered')).toEqual([
      {
        resource: 'stream leaseq-drift-lowered',
        setting: 'retention_hours',
        expected: '48 h',
        observed: '24 h',
      },
    ]);
    // The sweep records it as the queue's `drift` gauge, which its alarm reads.
    const { lines, sweep } = gaugedSweep(t);
    await sweep({}, lambdaContext('sweep', 1));
    await sweep.published();
    const gauges = (queue: string) => lines.find((line) => line.queue === queue);
    // A queue whose gauges are all 0 writes no line.
    expect(gauges('kept')).toBeUndefined();
    expect(gauges('lowered')?.drift).toBe(1);
  });
});
