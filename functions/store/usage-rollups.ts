import { type DocumentClient, PutCommand, QueryCommand } from '../aws/dynamodb.js';
import {
  hourOf,
  type RollupSample,
  USAGE_RETENTION_DAYS,
  type UsageSample,
  usageSampleOf,
} from '../core/usage-sample.js';
import { buildKeyCondition } from './expression.js';
import { TTL_ATTRIBUTE, usageRollupKey, usageRollupPk } from './keys.js';

/**
 * A queue's hourly usage rollups: the first sample of each hour the sweep took, kept
 * USAGE_RETENTION_DAYS (TTL), so a month's usage is the difference of two of them. One write an
 * hour per queue in use (~730 a month), where keeping every sample would be 43,200.
 */
export class UsageRollups {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  /** Keeps `sample` as its hour's; `origin`: the queue's first sample (nothing counted before it). */
  async put(queue: string, sample: UsageSample, origin: boolean): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          ...usageRollupKey(queue, hourOf(sample.at)),
          ...sample,
          ...(origin ? { origin: true } : {}),
          [TTL_ATTRIBUTE]: Math.ceil(sample.at / 1000) + USAGE_RETENTION_DAYS * 86_400,
        },
      }),
    );
  }

  /** The rollups around `t`: the two latest of its hour or before, and the first after. */
  async around(queue: string, t: number): Promise<RollupSample[]> {
    const sk = usageRollupKey(queue, hourOf(t)).sk;
    const page = async (condition: string, forward: boolean, limit: number) => {
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          ...buildKeyCondition(condition, { ':pk': usageRollupPk(queue), ':sk': sk }),
          ScanIndexForward: forward,
          Limit: limit,
        }),
      );
      return (out.Items ?? []).flatMap((item) => {
        const sample = usageSampleOf(item);
        return sample ? [{ ...sample, ...(item.origin === true ? { origin: true } : {}) }] : [];
      });
    };
    const [before, after] = await Promise.all([
      page('#pk = :pk AND #sk <= :sk', false, 2),
      page('#pk = :pk AND #sk > :sk', true, 1),
    ]);
    return [...before, ...after];
  }
}
