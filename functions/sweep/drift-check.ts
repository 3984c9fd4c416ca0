import type { Logger } from '@aws-lambda-powertools/logger';
import {
  DescribeContinuousBackupsCommand,
  DescribeTableCommand,
  type DocumentClient,
} from '../aws/dynamodb.js';
import { DescribeStreamSummaryCommand, type KinesisClient } from '../aws/kinesis.js';
import type { TenantConfig } from '../core/config.js';
import {
  type DriftFinding,
  type ObservedTable,
  streamDrift,
  streamMoveDrift,
  tableDrift,
} from '../core/drift.js';
import type { StreamMarks } from '../store/stream-marks.js';

export interface DriftCheckDeps {
  tenant: TenantConfig;
  kinesis: KinesisClient;
  doc: DocumentClient;
  table: string;
  streamMarks: Pick<StreamMarks, 'all'>;
  logger: Logger;
  now?: () => number;
}

/** Settings are read back this often; the gauges publish the last reading every minute between. */
const CHECK_EVERY_MS = 3_600_000;

/**
 * What the stack promises, read back where it runs (core/drift.ts), with the gauges: each
 * queue's stream, the stream its ranges were admitted from (store/stream-marks.ts), and the table
 * every queue's state is in (its findings count for each queue).
 * Control-plane reads, free of charge, once an hour per instance: a lowered setting is not a
 * minute's emergency, and the sweep's idle minute should not pay for 2 + one a queue of them. A call
 * that fails or that the service lacks (dynalite has neither backups nor deletion protection)
 * reads as unknown, never as drift.
 */
export class DriftCheck {
  private last: { at: number; found: Map<string, DriftFinding[]> } | undefined;

  constructor(private readonly deps: DriftCheckDeps) {}

  async check(): Promise<Map<string, DriftFinding[]>> {
    const now = this.deps.now?.() ?? Date.now();
    if (this.last && now - this.last.at < CHECK_EVERY_MS) return this.last.found;
    this.last = { at: now, found: await this.read() };
    return this.last.found;
  }

  private async read(): Promise<Map<string, DriftFinding[]>> {
    const { tenant, table } = this.deps;
    const tableFindings = tableDrift(table, tenant, await this.observeTable());
    const out = new Map<string, DriftFinding[]>();
    for (const [queue, config] of Object.entries(tenant.queues)) {
      const stream = config.stream;
      const summary = await this.readOrUnknown(() =>
        this.deps.kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream })),
      );
      const findings = [
        ...streamDrift(stream, config, {
          retentionHours: summary?.StreamDescriptionSummary?.RetentionPeriodHours,
        }),
        ...streamMoveDrift(stream, await this.deps.streamMarks.all(queue)),
        ...tableFindings,
      ];
      if (findings.length)
        this.deps.logger.warn('drift: a setting the stack promises is lowered', { queue, findings });
      out.set(queue, findings);
    }
    return out;
  }

  private async observeTable(): Promise<ObservedTable> {
    const TableName = this.deps.table;
    const [described, backups] = await Promise.all([
      this.readOrUnknown(() => this.deps.doc.send(new DescribeTableCommand({ TableName }))),
      this.readOrUnknown(() => this.deps.doc.send(new DescribeContinuousBackupsCommand({ TableName }))),
    ]);
    const pitr =
      backups?.ContinuousBackupsDescription?.PointInTimeRecoveryDescription?.PointInTimeRecoveryStatus;
    return {
      ...(pitr !== undefined ? { pointInTimeRecovery: pitr === 'ENABLED' } : {}),
      ...(described?.Table?.DeletionProtectionEnabled !== undefined
        ? { deletionProtection: described.Table.DeletionProtectionEnabled }
        : {}),
    };
  }

  private async readOrUnknown<T>(call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (err) {
      this.deps.logger.debug('drift: a setting could not be read', { error: String(err) });
      return undefined;
    }
  }
}
