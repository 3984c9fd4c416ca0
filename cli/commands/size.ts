import type { Command } from 'commander';
import { type GlobalOptions, nonNegativeNumber, positiveNumber } from '../context.js';
import { fields, num, usd, writeJson, writeOut } from '../output.js';
import { PRICE_BASIS, SIZING_DEFAULTS, type SizingResult, SOURCES, size } from '../sizing.js';

/** `leaseq size`: the sizing calculator (cli/sizing.ts does the arithmetic). Makes no call. */

export function registerSize(program: Command): void {
  program
    .command('size')
    .description('size a deployment: shards, DynamoDB units, Lambda concurrency, $ a month')
    .requiredOption('--rate <n>', 'messages per second, sustained', positiveNumber)
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
      '--envelope-bytes <n>',
      "leaseq's envelope around each payload (an estimate)",
      nonNegativeNumber,
      SIZING_DEFAULTS.envelopeBytes,
    )
    .action(
      (
        opts: {
          rate: number;
          bytes: number;
          retentionHours: number;
          ordered?: boolean;
          headroom: number;
          envelopeBytes: number;
        },
        cmd: Command,
      ) => {
        const result = size({
          rate: opts.rate,
          bytes: opts.bytes,
          retentionHours: opts.retentionHours,
          ordered: opts.ordered === true,
          headroom: opts.headroom,
          envelopeBytes: opts.envelopeBytes,
        });
        if (cmd.optsWithGlobals<GlobalOptions>().json)
          writeJson({ ...result, sources: SOURCES, prices: PRICE_BASIS });
        else writeOut(sizingReport(result));
      },
    );
}

export function sizingReport(r: SizingResult): string {
  const k = r.kinesis;
  const d = r.dynamodb;
  const l = r.lambda;
  const m = r.monthlyUsd;
  return [
    `${num(r.input.rate)} msg/s of ${num(r.input.bytes)} B${r.input.ordered ? ', ordered' : ''}, ${r.input.retentionHours} h retention`,
    fields([
      [
        'Kinesis record',
        `${num(k.recordBytes)} B (payload${k.claimChecked ? ' in S3, claim' : ''} + ~${r.input.envelopeBytes} B envelope)`,
      ],
      [
        'shards for bytes',
        `${num(k.shardsForBytes)} (${num(k.bytesPerSecond / 1_048_576, 2)} MiB/s at 1 MiB/s a shard)`,
      ],
      ['shards for records', `${num(k.shardsForRecords)} (1,000 records/s a shard)`],
      ['binding limit', k.binding],
      ['shards', `${num(k.shards)} (with ${Math.round(r.input.headroom * 100)} % headroom)`],
      ['DynamoDB writes', `${num(d.writeUnitsPerSecond)} WRU/s (${SOURCES.writeUnitsPerMessage} a message)`],
      ['DynamoDB reads', `${num(d.readUnitsPerSecond)} RRU/s (${SOURCES.readUnitsPerMessage} a message)`],
      [
        'DynamoDB requests',
        `${num(d.requestsPerSecond)}/s (${SOURCES.dynamodbRequestsPerMessage} a message)`,
      ],
      ['API calls', `${num(l.apiRequestsPerSecond)}/s (${SOURCES.apiRequestsPerMessage} a message)`],
      [
        'Lambda concurrency',
        `${num(l.concurrency)} (api ${num(l.apiConcurrency)} at ${SOURCES.apiSecondsPerRequest * 1000} ms a call, dispatch ${num(l.dispatchConcurrency)}: one a shard, sweep ${l.sweepConcurrency})`,
      ],
      ['$/month Kinesis shards', usd(m.kinesisShards)],
      ['$/month Kinesis retention > 24 h', usd(m.kinesisRetention)],
      ['$/month Kinesis PUT units', usd(m.kinesisPut)],
      ['$/month DynamoDB', usd(m.dynamodb)],
      ['$/month API Gateway', usd(m.apiGateway)],
      ['$/month Lambda (api)', usd(m.lambda)],
      ['$/month total', usd(m.total)],
    ]),
    `units per message: docs/performance.md (c4-ids: producer ids, no index units); prices: ${PRICE_BASIS}`,
    ...r.notes.map((n) => `note: ${n}`),
  ].join('\n');
}
