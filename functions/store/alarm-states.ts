import { type DocumentClient, GetCommand, PutCommand } from '../aws/dynamodb.js';
import type { AlarmState } from '../observability/alarm-evaluation.js';
import { ALARM_STATE_KEY } from './keys.js';
import { isConditionFailed } from './util.js';

/** What the sweep last found of the queues' alarms, and the version a write is conditional on. */
export interface StoredAlarmState {
  alarms: AlarmState;
  version: number;
}

/**
 * The queues' alarm state (observability/alarm-evaluation.ts), one item a tenant: read once a
 * gauge pass, written only when an alarm changed, conditionally on the version read, so two sweeps
 * that evaluated at once keep one's changes.
 */
export class AlarmStates {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  async get(): Promise<StoredAlarmState> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: ALARM_STATE_KEY, ConsistentRead: true }),
    );
    return {
      alarms: (out.Item?.alarms as AlarmState | undefined) ?? {},
      version: Number(out.Item?.version ?? 0),
    };
  }

  /** Whether the state was written: false when another sweep wrote since `read`. */
  async put(read: StoredAlarmState, alarms: AlarmState): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { ...ALARM_STATE_KEY, alarms, version: read.version + 1 },
          ConditionExpression: 'attribute_not_exists(pk) OR version = :read',
          ExpressionAttributeValues: { ':read': read.version },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }
}
