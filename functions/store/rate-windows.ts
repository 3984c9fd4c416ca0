import { type DocumentClient, UpdateCommand } from '../aws/dynamodb.js';
import { buildUpdate } from './expression.js';
import { TTL_ATTRIBUTE } from './keys.js';

/**
 * Per-second usage counters shared by every function instance: each instance adds what it
 * used and reads back the total of the second, about once a second per quota.
 */
export class RateWindows {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  /** Adds `used` to the window of `second` for `dimension`; the window's total after it. */
  async add(dimension: string, second: number, used: number): Promise<number> {
    const out = await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: `TENANT#RATE#${dimension}`, sk: String(second) },
        ...buildUpdate({ add: { used }, set: { [TTL_ATTRIBUTE]: second + 120 } }),
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(out.Attributes?.used ?? used);
  }
}
