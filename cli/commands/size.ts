import type { Command } from 'commander';
import { API_GATEWAY_HTTP_FIRST_TIER_REQUESTS, PRICES } from '../../bench/prices.js';
import { planShardCountSteps } from '../../functions/core/reshard-plan.js';
import { type GlobalOptions, nonNegativeNumber, positiveNumber, UsageError } from '../context.js';
import { fields, num, usd, writeJson, writeOut } from '../output.js';
import {
  BENCH_FIGURES,
  figuresBasis,
  PRICE_BASIS,
  peakError,
  SIZING_DEFAULTS,
  type SizingResult,
  SOURCES,
  size,
} from '../sizing.js';

/** `leaseq size`: the sizing calculator (cli/sizing.ts does the arithmetic). Makes no call. */

export function registerSize(program: Command): void {
  program
    .command('size')
    .description('size a deployment: shards, DynamoDB units, Lambda concurrency, $ a month')
    .requiredOption('--rate <n>', 'messages per second, sustained (what a month costs)', positiveNumber)
    .option(
      '--peak <n>',
      'messages per second at the busiest (what capacity is sized for; default --rate)',
      positiveNumber,
    )
    .requiredOption('--bytes <n>', 'average payload bytes', positiveNumber)
    .option('--retention-hours <h>', 'the stream retention', positiveNumber, SIZING_DEFAULTS.retentionHours)
    .option('--ordered', 'an ordered queue')
    .option(
      '--headroom <fraction>',
      'spare shard capacity (0.2 = 20 %)',
      nonNegativeNumber,
      SIZING_DEFAULTS.headroom,
    )
    .option(
      '--current-shards <n>',
      "the stream's shards now: the reshard steps to what the rate needs",
      positiveNumber,
    )
    .option(
      '--envelope-bytes <n>',
      "leaseq's envelope around each payload (an estimate)",
      nonNegativeNumber,
      SIZING_DEFAULTS.envelopeBytes,
    )
    .action(
      (
        opts: {
          rate: number;
          peak?: number;
          bytes: number;
          retentionHours: number;
          ordered?: boolean;
          headroom: number;
          envelopeBytes: number;
          currentShards?: number;
        },
        cmd: Command,
      ) => {
        const wrongPeak = peakError(opts.rate, opts.peak);
        if (wrongPeak) throw new UsageError(wrongPeak);
        const result = size({
          rate: opts.rate,
          ...(opts.peak !== undefined ? { peak: opts.peak } : {}),
          bytes: opts.bytes,
          retentionHours: opts.retentionHours,
          ordered: opts.ordered === true,
          headroom: opts.headroom,
          envelopeBytes: opts.envelopeBytes,
        });
        if (opts.currentShards !== undefined && !Number.isInteger(opts.currentShards))
          throw new UsageError(`--current-shards: not a whole number: ${opts.currentShards}`);
        const reshard =
          opts.currentShards === undefined
            ? undefined
            : {
                from: opts.currentShards,
                steps: planShardCountSteps(opts.currentShards, result.kinesis.shards),
              };
        if (cmd.optsWithGlobals<GlobalOptions>().json)
          writeJson({
            ...result,
            ...(reshard ? { reshard } : {}),
            sources: SOURCES,
            prices: PRICE_BASIS,
            figuresFrom: figuresBasis(BENCH_FIGURES),
          });
        else writeOut([sizingReport(result), ...(reshard ? [reshardLine(reshard)] : [])].join('\n'));
      },
    );
}

/** The deploys a reshard takes: UpdateShardCount at most doubles or halves a stream at a time. */
export function reshardLine({ from, steps }: { from: number; steps: readonly number[] }): string {
  if (!steps.length) return `reshard: none, ${num(from)} shards is what the rate needs`;
  const path = [from, ...steps].map((n) => num(n)).join(' → ');
  return `reshard: ${path}, ${steps.length === 1 ? 'one deploy' : `${steps.length} deploys`} of the tenant file's shards (docs/resharding.md)`;
}

/** "2,840 WRU/s", or "2,840 WRU/s at the peak, 71 sustained" when the two differ. */
function perSecond(r: SizingResult, atPeak: number, unit: string): string {
  const { rate, peak } = r.input;
  if (peak === rate) return `${num(atPeak)}${unit}`;
  return `${num(atPeak)}${unit} at the peak, ${num((atPeak / peak) * rate)} sustained`;
}

/** A figure a message: two decimals at most, as the bench's figures are given. */
const each = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 2 });

export function sizingReport(r: SizingResult): string {
  const { input, figures } = r;
  const k = r.kinesis;
  const d = r.dynamodb;
  const l = r.lambda;
  const m = r.monthlyUsd;
  const od = m.kinesisOnDemand;
  const sustained =
    input.peak === input.rate
      ? `${num(input.rate)} msg/s`
      : `${num(input.rate)} msg/s sustained, ${num(input.peak)} at the peak,`;
  const segmentItems = r.segments.store === 'dynamodb';
  const withSegments = (bench: number, total: number) =>
    segmentItems ? `${each(total)} a message: ${bench} + segments` : `${bench} a message`;
  const s3 =
    r.s3.putsPerMessage === 0
      ? 'none'
      : `${each(r.s3.putsPerMessage)} PUT and ${each(r.s3.getsPerMessage)} GET a message (${[
          ...(k.claimChecked ? ['claim checks'] : []),
          ...(r.segments.store === 's3' ? ['segments'] : []),
        ].join(', ')})`;
  const firstTier = API_GATEWAY_HTTP_FIRST_TIER_REQUESTS;
  const perMillion = (price: { usd: number }) => usd(price.usd * 1e6);
  const apiTiers =
    r.perMonth.apiRequests > firstTier
      ? ` (${num(r.perMonth.apiRequests / 1e6)} M requests: ${num(firstTier / 1e6)} M at ` +
        `${perMillion(PRICES.apiGatewayHttpRequest)} a million, the rest at ${perMillion(PRICES.apiGatewayHttpRequestOver300M)})`
      : '';
  const cheaper =
    r.cheaper.mode === 'provisioned'
      ? `provisioned stream, by ${usd(r.cheaper.byUsd)} a month (as leaseq's stack deploys it)`
      : `on-demand stream, by ${usd(r.cheaper.byUsd)} a month (leaseq's stack deploys provisioned: switch the stream)`;
  return [
    `${sustained} of ${num(input.bytes)} B${input.ordered ? ', ordered' : ''}, ${input.retentionHours} h retention`,
    fields([
      [
        'Kinesis record',
        `${num(k.recordBytes)} B (payload${k.claimChecked ? ' in S3, claim' : ''} + ~${input.envelopeBytes} B envelope)`,
      ],
      [
        'shards for bytes',
        `${num(k.shardsForBytes)} (${num(k.bytesPerSecond / 1_048_576, 2)} MiB/s at 1 MiB/s a shard)`,
      ],
      ['shards for records', `${num(k.shardsForRecords)} (1,000 records/s a shard)`],
      ['binding limit', k.binding],
      [
        'shards',
        `${num(k.shards)} (${input.peak === input.rate ? '' : 'the peak '}with ${Math.round(input.headroom * 100)} % headroom)`,
      ],
      [
        'DynamoDB writes',
        `${perSecond(r, d.writeUnitsPerSecond, ' WRU/s')} (${withSegments(figures.writeUnitsPerMessage, d.writeUnitsPerMessage)})`,
      ],
      [
        'DynamoDB reads',
        `${perSecond(r, d.readUnitsPerSecond, ' RRU/s')} (${withSegments(figures.readUnitsPerMessage, d.readUnitsPerMessage)})`,
      ],
      [
        'DynamoDB requests',
        `${perSecond(r, d.requestsPerSecond, '/s')} (${withSegments(figures.dynamodbRequestsPerMessage, d.requestsPerMessage)})`,
      ],
      [
        'segments',
        `one per ${SOURCES.segmentMessages} messages, ~${num(r.segments.bytes)} B: ${segmentItems ? 'DynamoDB items (up to 8 KB)' : 'S3 objects (past 8 KB)'}`,
      ],
      ['S3 requests', s3],
      [
        'API calls',
        `${perSecond(r, l.apiRequestsPerSecond, '/s')} (${figures.apiRequestsPerMessage} a message)`,
      ],
      [
        'Lambda concurrency',
        `${num(l.concurrency)} (api ${num(l.apiConcurrency)} at ${SOURCES.apiSecondsPerRequest * 1000} ms a call, dispatch ${num(l.dispatchConcurrency)}: one a shard, sweep ${l.sweepConcurrency})`,
      ],
      ['$/month Kinesis shards', usd(m.kinesisShards)],
      ['$/month Kinesis retention > 24 h', usd(m.kinesisRetention)],
      ['$/month Kinesis PUT units', usd(m.kinesisPut)],
      [
        '$/month Kinesis on-demand',
        `${usd(od.total)} instead of the three above (stream ${usd(od.stream)}, data in ${usd(od.dataIn)}, out ${usd(od.dataOut)}, retention ${usd(od.retention)})`,
      ],
      ['$/month DynamoDB', usd(m.dynamodb)],
      ['$/month S3 requests', usd(m.s3)],
      ['$/month API Gateway', `${usd(m.apiGateway)}${apiTiers}`],
      ['$/month Lambda (api)', usd(m.lambda)],
      ['$/month total, provisioned', usd(m.total)],
      ['$/month total, on-demand', usd(m.totalOnDemand)],
      ['cheaper', cheaper],
    ]),
    `per-message figures: ${figuresBasis(figures)}; prices: ${PRICE_BASIS}`,
    ...r.notes.map((n) => `note: ${n}`),
  ].join('\n');
}
