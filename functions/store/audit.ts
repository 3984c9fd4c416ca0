import { type DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { newMessageId } from '../core/ids.js';
import { buildKeyCondition } from './expression.js';
import { auditPk } from './keys.js';

/** The audit trail of operator actions on a queue: who, when, what and why. */

export type AuditAction = 'skip' | 'purge' | 'redrive' | 'redrive_cancel';

export interface AuditEntry {
  at: string;
  action: AuditAction;
  actor: string;
  target: string;
  reason?: string;
  detail?: Record<string, unknown>;
}

export class AuditTrail {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async record(queue: string, entry: Omit<AuditEntry, 'at'>, now: number): Promise<void> {
    const at = new Date(now).toISOString();
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        // The ULID keeps two entries of the same millisecond apart and in order.
        Item: { pk: auditPk(queue), sk: `${at}#${newMessageId(now)}`, at, ...entry },
      }),
    );
  }

  /** Newest first. */
  async list(queue: string, limit: number): Promise<AuditEntry[]> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        ...buildKeyCondition('#pk = :pk', { ':pk': auditPk(queue) }),
        ScanIndexForward: false,
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map(({ pk: _pk, sk: _sk, ...entry }) => entry as AuditEntry);
  }
}
