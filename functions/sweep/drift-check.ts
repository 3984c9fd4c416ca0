import type { Logger } from '@aws-lambda-powertools/logger';
import {
  DescribeContinuousBackupsCommand,
  DescribeTableCommand,
  type DocumentClient,
} from '../aws/dynamodb.js';
import { DescribeStreamSummaryCommand, type KinesisClient } from '../aws/kinesis.js';
import { streamName, type TenantConfig } from '../core/config.js';
import { type DriftFinding, type ObservedTable, streamDrift, tableDrift } from '../core/drift.js';

export interface DriftCheckDeps {
  tenant: TenantConfig;
  kinesis: KinesisClient;
  doc: DocumentClient;
  table: string;
  logger: Logger;
}

/**
 * What the stack promises, read back where it runs (core/drift.ts), with the gauges: each
 * queue's stream, and the table every queue's state is in (its findings count for each queue).
 * Control-plane reads, free of charge; a call that fails or that the service lacks (dynalite
 * has neither backups nor deletion protection) reads as unknown, never as drift.
 */
export class DriftCheck {
  constructor(private readonly deps: DriftCheckDeps) {}

  async check(): Promise<Map<string, DriftFinding[]>> {
    const { tenant, table } = this.deps;
    const tableFindings = tableDrift(table, tenant, await this.observeTable());
    const out = new Map<string, DriftFinding[]>();
    for (const [queue, config] of Object.entries(tenant.queues)) {
      const stream = streamName(tenant.tenant, queue);
      const summary = await this.read(() =>
        this.deps.kinesis.send(new DescribeStreamSummaryCommand({ StreamName: stream })),
      );
      const findings = [
        ...streamDrift(stream, config, {
          retentionHours: summary?.StreamDescriptionSummary?.RetentionPeriodHours,
        }),
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
      this.read(() => this.deps.doc.send(new DescribeTableCommand({ TableName }))),
      this.read(() => this.deps.doc.send(new DescribeContinuousBackupsCommand({ TableName }))),
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

  private async read<T>(call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (err) {
      this.deps.logger.debug('drift: a setting could not be read', { error: String(err) });
      return undefined;
    }
  }
}
