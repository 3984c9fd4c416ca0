import { DeleteCommand, type DocumentClient, QueryCommand, UpdateCommand } from '../aws/dynamodb.js';
import { ADMISSION_LAGS_PK, admissionLagKey } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * A queue on a shared stream whose admission fell behind on a shard (its window full, or an
 * error): dispatch passes over its records there and notes how far (`through`); the sweep admits
 * them from the log and ends the lag once it has read past that (admission/lag-catch-up.ts).
 * Every lag of the tenant is one partition, read whole in one query.
 */
export interface AdmissionLag {
  queue: string;
  shard: string;
  /** Dispatch passed over the queue's records up to this sequence number. */
  through: string;
}

export class AdmissionLags {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  /** Every lag now, read consistently: dispatch must not miss one that began a batch ago. */
  async all(): Promise<AdmissionLag[]> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': ADMISSION_LAGS_PK },
        ConsistentRead: true,
      }),
    );
    return (out.Items ?? []).map((item) => {
      const sk = String(item.sk);
      const at = sk.lastIndexOf('#');
      return { queue: sk.slice(0, at), shard: sk.slice(at + 1), through: String(item.through) };
    });
  }

  /** Begins a lag, or moves an existing one's `through` on. */
  async begin(queue: string, shard: string, through: string): Promise<void> {
    await this.doc.send(this.update(queue, shard, through));
  }

  /** Moves a lag's `through` on; false when it has ended meanwhile (the caller then admits). */
  async extend(queue: string, shard: string, through: string): Promise<boolean> {
    try {
      await this.doc.send(this.update(queue, shard, through, 'attribute_exists(pk)'));
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  /** Ends a lag read up to `through`; false when dispatch moved it on meanwhile. */
  async end(lag: AdmissionLag): Promise<boolean> {
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.table,
          Key: admissionLagKey(lag.queue, lag.shard),
          ConditionExpression: 'through = :t',
          ExpressionAttributeValues: { ':t': lag.through },
        }),
      );
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
    return true;
  }

  private update(queue: string, shard: string, through: string, condition?: string) {
    return new UpdateCommand({
      TableName: this.table,
      Key: admissionLagKey(queue, shard),
      UpdateExpression: 'SET through = :t',
      ...(condition ? { ConditionExpression: condition } : {}),
      ExpressionAttributeValues: { ':t': through },
    });
  }
}
