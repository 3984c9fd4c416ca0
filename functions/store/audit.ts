import { type DocumentClient, PutCommand, QueryCommand } from '../aws/dynamodb.js';
import { namespaceParts } from '../core/config.js';
import { newMessageId } from '../core/ids.js';
import { buildKeyCondition } from './expression.js';
import { auditPk } from './keys.js';

/** The audit trail of operator actions on a queue: who, when, what and why. */

export type AuditAction =
  | 'skip'
  | 'purge'
  | 'purge_queue'
  | 'redrive'
  | 'redrive_cancel'
  | 'replay'
  | 'replay_cancel'
  | 'retention'
  | 'retention_cancel'
  | 'pause'
  | 'resume';

export interface AuditEntry {
  at: string;
  action: AuditAction;
  actor: string;
  /** The Lambda consumer whose state the action was on; absent for the queue's own. */
  consumer?: string;
  target: string;
  reason?: string;
  detail?: Record<string, unknown>;
}

export class AuditTrail {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  /**
   * `name` is a queue or a consumer's namespace: an action on a consumer's state goes to its
   * queue's trail, naming the consumer, so one trail tells everything done on the queue.
   */
  async record(name: string, entry: Omit<AuditEntry, 'at' | 'consumer'>, now: number): Promise<void> {
    const at = new Date(now).toISOString();
    const { queue, consumer } = namespaceParts(name);
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        // The ULID keeps two entries of the same millisecond apart and in order.
        Item: {
          pk: auditPk(queue),
          sk: `${at}#${newMessageId(now)}`,
          at,
          ...(consumer !== undefined ? { consumer } : {}),
          ...entry,
        },
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
