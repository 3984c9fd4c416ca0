import type { DocumentClient } from '../aws/dynamodb.js';
import { sumUsage, totalsAt, USAGE_ACCURACY, usageBetween } from '../core/usage.js';
import { type RollupSample, usageSampleOf } from '../core/usage-sample.js';
import type { TotalsSamples } from '../store/totals-samples.js';
import { UsageRollups } from '../store/usage-rollups.js';
import type { QueueUsage, UsageResponse } from '../wire/responses.js';
import { iso } from './views.js';

export interface UsageReportDeps {
  doc: DocumentClient;
  table: string;
  samples: Pick<TotalsSamples, 'get'>;
}

/**
 * The usage of `queues` over a range (GET /usage), each from its hourly rollups around either end
 * and its latest sample (core/usage.ts). Loaded on the first ask (operations/usage.ts).
 */
export async function usageReport(
  deps: UsageReportDeps,
  queues: readonly string[],
  range: { from: number; to: number },
): Promise<UsageResponse> {
  const rollups = new UsageRollups(deps.doc, deps.table);
  const each = await Promise.all(
    queues.map(async (queue): Promise<QueueUsage> => {
      const [atFrom, atTo, { item }] = await Promise.all([
        rollups.around(queue, range.from),
        rollups.around(queue, range.to),
        deps.samples.get(queue),
      ]);
      // After the rollups: of a sample kept twice, the rollup's copy says whether it was the first.
      const sample = item ? usageSampleOf(item) : undefined;
      const latest: RollupSample[] = sample ? [sample] : [];
      const start = totalsAt(range.from, [...atFrom, ...latest]);
      const end = totalsAt(range.to, [...atTo, ...latest]);
      return {
        queue,
        sampled_from: iso(start.at),
        sampled_to: iso(Math.max(start.at, end.at)),
        ...usageBetween(start.totals, end.totals),
      };
    }),
  );
  return {
    from: iso(range.from),
    to: iso(range.to),
    queues: each,
    total: sumUsage(each),
    accuracy: USAGE_ACCURACY,
  };
}
