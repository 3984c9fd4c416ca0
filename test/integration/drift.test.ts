import { Logger } from '@aws-lambda-powertools/logger';
import { DecreaseStreamRetentionPeriodCommand } from '@aws-sdk/client-kinesis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamName } from '../../functions/core/config.js';
import { metricsOptions, SERVICE } from '../../functions/observability/metrics.js';
import { createSweepHandler } from '../../functions/sweep/app.js';
import { DriftCheck } from '../../functions/sweep/drift-check.js';
import { createAdminClients } from '../../infra/local/admin-clients.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { CapturedMetrics } from '../helpers/captured-metrics.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The drift check against the emulators: kinesalite keeps a stream's retention as DynamoDB's
 * emulators do not keep backups or deletion protection, so a lowered stream retention is what is
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

const check = () =>
  new DriftCheck({
    tenant: t.runtime.config.tenant,
    kinesis: t.runtime.clients.kinesis,
    doc: t.runtime.clients.doc,
    table: t.runtime.config.tableName,
    logger: new Logger({ logLevel: 'SILENT' }),
  }).check();

describe('the drift check', () => {
  it("finds nothing where the stack's settings hold, then a stream whose retention was lowered by hand, in its gauge", async () => {
    expect([...(await check()).values()].flat()).toEqual([]);
    const admin = createAdminClients(t.runtime.endpoints);
    await admin.kinesis.send(
      new DecreaseStreamRetentionPeriodCommand({
        StreamName: streamName('drift', 'lowered'),
        RetentionPeriodHours: 24,
      }),
    );
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
    // The sweep publishes it as the queue's `drift` gauge, which its alarm reads.
    const metrics = new CapturedMetrics(metricsOptions(SERVICE.sweep, 'drift'));
    const sweep = createSweepHandler(
      t.runtime.config,
      t.runtime.clients,
      { gaugeIntervalMs: 0, passIntervalMs: 0, reserveMs: 0 },
      new Logger({ logLevel: 'SILENT' }),
      metrics,
    );
    await sweep({}, lambdaContext('sweep', 1));
    await sweep.published();
    const gauge = (queue: string) =>
      (
        metrics.documents.find((d) => (d as Record<string, unknown>).queue === queue) as Record<
          string,
          number
        >
      ).drift;
    expect([gauge('kept'), gauge('lowered')]).toEqual([0, 1]);
  });
});
