import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_GATEWAY_HTTP_FIRST_TIER_REQUESTS } from '../../bench/prices.js';
import { reshardLine, sizingReport } from '../../cli/commands/size.js';
import { drainText } from '../../cli/commands/stats.js';
import { bytes, duration, num, percent, preview, usd } from '../../cli/output.js';
import {
  apiGatewayMonthlyUsd,
  BENCH_FIGURES,
  type BenchFigures,
  peakError,
  SIZING_DEFAULTS,
  SOURCES,
  size,
} from '../../cli/sizing.js';
import { planShardCountSteps } from '../../functions/core/reshard-plan.js';
import { SEGMENT_ITEM_MAX_BYTES } from '../../functions/store/segments.js';
import { jsonErrorPlace } from '../../infra/tenant-file.js';

/** The sizing arithmetic against a hand calculation, and the formatting helpers. */

const base = { retentionHours: 96, ordered: false, headroom: 0.2, envelopeBytes: 300 };

/**
 * The figures the hand calculations use, fixed here so a bench run that rewrites
 * bench/figures.json changes the answers, not these tests.
 */
const C4_IDS: BenchFigures = {
  run: 'c4-ids',
  description: '4 worker(s), producer ids',
  date: '2026-12-01',
  dynamodb: 'dynalite',
  payloadBytes: 1024,
  writeUnitsPerMessage: 1.42,
  readUnitsPerMessage: 2,
  dynamodbRequestsPerMessage: 1.91,
  apiRequestsPerMessage: 0.33,
};
const sized = (input: Parameters<typeof size>[0]) => size(input, C4_IDS);

const GB_IN_KB = 1024 * 1024;

describe('size', () => {
  it('200,000 msg/s of 2 KiB: bytes bind, by hand', () => {
    const r = sized({ ...base, rate: 200_000, bytes: 2048 });
    // record: 2048 + 300 = 2348 B; 200,000 × 2348 = 469,600,000 B/s; / 1,048,576 = 447.85 → 448 shards.
    expect(r.kinesis.recordBytes).toBe(2348);
    expect(r.kinesis.shardsForBytes).toBe(448);
    // 200,000 / 1,000 records/s = 200 shards.
    expect(r.kinesis.shardsForRecords).toBe(200);
    expect(r.kinesis.binding).toBe('bytes');
    // 447.85 × 1.2 = 537.42 → 538: past the account's default 500, which the answer says how to raise.
    expect(r.kinesis.shards).toBe(538);
    expect(r.kinesis.overAccountShards).toBe(true);
    expect(r.notes).toContainEqual(expect.stringMatching(/^538 shards pass .*"Shards per Region"/));
    expect(r.notes).toContainEqual(expect.stringContaining('"Concurrent executions"'));
    expect(r.notes).toContainEqual(
      expect.stringContaining('"Table-level write throughput limit" and "Table-level read throughput limit"'),
    );
    // 1.42 WRU and 2.00 RRU a message (the bench's c4-ids); segments of 10 × 2,348 B are S3 objects.
    expect(r.dynamodb.writeUnitsPerSecond).toBeCloseTo(284_000, 3);
    expect(r.dynamodb.readUnitsPerSecond).toBeCloseTo(400_000, 3);
    expect(r.dynamodb.overTableQuota).toBe(true);
    // 200,000 × 0.33 × 0.045 s = 2,970 API functions busy, + 538 dispatch + 1 sweep.
    expect(r.lambda.apiConcurrency).toBe(2970);
    expect(r.lambda.concurrency).toBe(3509);
    // A month: 200,000 × 3,600 × 730 = 525.6 billion messages; × (1.42 × $0.625 + 2.00 × $0.125) per million.
    expect(r.perMonth.messages).toBe(525_600_000_000);
    expect(r.monthlyUsd.dynamodb).toBeCloseTo(525_600 * 1.1375, 2);
    // 538 shards × 730 h × $0.015, and × $0.02 for retention past 24 h.
    expect(r.monthlyUsd.kinesisShards).toBeCloseTo(538 * 730 * 0.015, 6);
    expect(r.monthlyUsd.kinesisRetention).toBeCloseTo(538 * 730 * 0.02, 6);
    // One 25 KB PUT payload unit a record: 525.6 billion × $0.014 per million.
    expect(r.monthlyUsd.kinesisPut).toBeCloseTo(525_600 * 0.014, 6);
    // API Gateway: 0.33 requests a message = 173,448 million; the first 300 M at $1, the rest at $0.90.
    expect(r.monthlyUsd.apiGateway).toBeCloseTo(300 + (173_448 - 300) * 0.9, 4);
    expect(r.monthlyUsd.apiGateway).toBeCloseTo(156_133.2, 4);
  });

  it('small messages: records bind; 24 h retention costs no extended retention', () => {
    const r = sized({ ...base, rate: 5_000, bytes: 100, retentionHours: 24, headroom: 0 });
    // 5,000 × 400 B = 2,000,000 B/s → 1.91 → 2 shards for bytes; 5 for records.
    expect(r.kinesis.shardsForBytes).toBe(2);
    expect(r.kinesis.shardsForRecords).toBe(5);
    expect(r.kinesis.binding).toBe('records');
    expect(r.kinesis.shards).toBe(5);
    expect(r.kinesis.overAccountShards).toBe(false);
    expect(r.notes.some((n) => /Shards per Region|Concurrent executions|Table-level/.test(n))).toBe(false);
    expect(r.monthlyUsd.kinesisRetention).toBe(0);
    expect(r.monthlyUsd.kinesisOnDemand.retention).toBe(0);
  });

  it('the binding limit is the larger share of a shard, not of the rounded counts', () => {
    // 1,000 × 400 B = 0.38 MiB/s (1 shard), 1,000 records/s (1 shard): records bind.
    const r = sized({ ...base, rate: 1_000, bytes: 100 });
    expect([r.kinesis.shardsForBytes, r.kinesis.shardsForRecords]).toEqual([1, 1]);
    expect(r.kinesis.binding).toBe('records');
    // 1.0 × 1.2 → 2 shards.
    expect(r.kinesis.shards).toBe(2);
  });

  it('claim-checked payloads put only the envelope in the stream, and count a PUT and a GET in S3; ordered adds its note', () => {
    const r = sized({ ...base, rate: 10, bytes: 1_000_000, ordered: true });
    expect(r.kinesis.claimChecked).toBe(true);
    expect(r.kinesis.recordBytes).toBe(SIZING_DEFAULTS.envelopeBytes);
    expect(r.kinesis.shards).toBe(1);
    expect(r.notes.some((n) => n.startsWith('ordered'))).toBe(true);
    // Segments of 10 × 300 B = 3,000 B are DynamoDB items: S3 has the claim checks only.
    expect(r.segments).toEqual({ bytes: 3000, store: 'dynamodb' });
    expect(r.s3).toEqual({ putsPerMessage: 1, getsPerMessage: 1 });
    // 10 × 2,628,000 = 26.28 M messages × ($0.005 + $0.0004 per 1,000) = $141.912.
    expect(r.monthlyUsd.s3).toBeCloseTo(141.912, 6);
    expect(r.notes).toContainEqual(
      expect.stringMatching(/claim check\): a PUT at produce and a GET a delivery/),
    );
  });
});

describe('size: the peak and the sustained rate', () => {
  it('sizes capacity for the peak and prices the month at the sustained rate, by hand', () => {
    const r = sized({ ...base, rate: 50, peak: 2_000, bytes: 1024, retentionHours: 24 });
    expect(r.input.peak).toBe(2_000);
    // record 1,324 B; 2,000 × 1,324 = 2,648,000 B/s / 1,048,576 = 2.53 → 3 shards for bytes, 2 for records;
    // 2.53 × 1.2 = 3.03 → 4 shards.
    expect(r.kinesis.bytesPerSecond).toBe(2_648_000);
    expect(r.kinesis.shardsForBytes).toBe(3);
    expect(r.kinesis.shardsForRecords).toBe(2);
    expect(r.kinesis.shards).toBe(4);
    // Quotas at the peak: 2,000 × 1.42 WRU; the API: 2,000 × 0.33 × 0.045 s = 29.7 → 30 + 4 dispatch + 1 sweep.
    expect(r.dynamodb.writeUnitsPerSecond).toBeCloseTo(2_840, 6);
    expect(r.lambda.apiConcurrency).toBe(30);
    expect(r.lambda.concurrency).toBe(35);
    // The month at 50 msg/s: 131.4 M messages; DynamoDB 131.4 × $1.1375; API Gateway 43.362 M × $1.
    expect(r.perMonth.messages).toBe(131_400_000);
    expect(r.monthlyUsd.dynamodb).toBeCloseTo(131.4 * 1.1375, 6);
    expect(r.monthlyUsd.apiGateway).toBeCloseTo(43.362, 6);
    // The peak's 4 shards are paid for all month: 4 × 730 × $0.015.
    expect(r.monthlyUsd.kinesisShards).toBeCloseTo(43.8, 6);
    expect(r.notes[0]).toMatch(
      /^capacity is sized for the peak of 2,000 msg\/s, the month's requests at the sustained 50/,
    );
  });

  it('a peak equal to the rate changes nothing; dollars follow the rate, capacity the peak', () => {
    const steady = sized({ ...base, rate: 2_000, bytes: 1024 });
    expect(sized({ ...base, rate: 2_000, peak: 2_000, bytes: 1024 })).toEqual(steady);
    expect(steady.notes.some((n) => n.startsWith('capacity is sized for the peak'))).toBe(false);
    const spiky = sized({ ...base, rate: 50, peak: 2_000, bytes: 1024 });
    expect(spiky.kinesis.shards).toBe(steady.kinesis.shards);
    expect(spiky.lambda.concurrency).toBe(steady.lambda.concurrency);
    expect(spiky.monthlyUsd.dynamodb * 40).toBeCloseTo(steady.monthlyUsd.dynamodb, 6);
    expect(spiky.monthlyUsd.kinesisShards).toBe(steady.monthlyUsd.kinesisShards);
  });

  it('a peak below the rate is refused', () => {
    expect(peakError(50, 20)).toBe(
      '--peak 20 is below --rate 50: the peak is the busiest rate, at least the sustained one',
    );
    expect(peakError(50, undefined)).toBeUndefined();
    expect(peakError(50, 50)).toBeUndefined();
    expect(() => sized({ ...base, rate: 50, peak: 20, bytes: 10 })).toThrow(RangeError);
  });

  it('quotas are checked against the peak, each naming the Service Quotas entry to raise', () => {
    // 25,000 msg/s: 35,500 WRU/s stays under 40,000, 50,000 RRU/s does not: only the read quota is named.
    const reads = sized({ ...base, rate: 100, peak: 25_000, bytes: 2048 });
    const dynamo = reads.notes.find((n) => n.startsWith('DynamoDB'));
    expect(dynamo).toContain('reads (50,000 RRU/s) at the peak');
    expect(dynamo).toContain('"Table-level read throughput limit"');
    expect(dynamo).not.toContain('write');
    // 70,000 × 0.33 × 0.045 = 1,039.5 → 1,040 API functions, past 1,000.
    const lambda = sized({ ...base, rate: 100, peak: 70_000, bytes: 100 });
    expect(lambda.lambda.overAccountDefault).toBe(true);
    expect(lambda.notes).toContainEqual(
      expect.stringMatching(/^Lambda concurrency at the peak \(\d[\d,]*\).*"Concurrent executions"/),
    );
    const shards = sized({ ...base, rate: 100, peak: 200_000, bytes: 2048 });
    expect(shards.kinesis.shards).toBe(538);
    expect(shards.notes).toContainEqual(expect.stringContaining('"Shards per Region"'));
  });
});

describe('size: Kinesis on demand beside provisioned', () => {
  it('prices an on-demand stream by the hour and the GB, by hand', () => {
    const r = sized({ ...base, rate: 200_000, bytes: 2048 });
    const od = r.monthlyUsd.kinesisOnDemand;
    // 2,348 B bills as 3 KB; 525.6 billion × 3 KB / 1,048,576 KB a GB = 1,503,753.66 GB in, × $0.08,
    // and read twice (dispatch and produce's fast admission) × $0.04.
    expect(r.kinesis.onDemand.billedKbPerRecord).toBe(3);
    expect(od.stream).toBeCloseTo(730 * 0.04, 9);
    expect(od.dataIn).toBeCloseTo(((525.6e9 * 3) / GB_IN_KB) * 0.08, 4);
    expect(od.dataIn).toBeCloseTo(120_300.29, 1);
    expect(od.dataOut).toBeCloseTo(((525.6e9 * 3 * 2) / GB_IN_KB) * 0.04, 4);
    // 96 h retention: 72 h past 24 of 469.6 MB/s held = 113,361.6 GB all month × $0.10.
    expect(od.retention).toBeCloseTo(((469_600_000 * 72 * 3600) / 1024 ** 3) * 0.1, 4);
    expect(od.total).toBeCloseTo(od.stream + od.dataIn + od.dataOut + od.retention, 6);
    const m = r.monthlyUsd;
    expect(m.totalOnDemand).toBeCloseTo(
      m.total - m.kinesisShards - m.kinesisRetention - m.kinesisPut + od.total,
      4,
    );
    // Steady and big: provisioned shards cost far less than 3 KB a record in and out.
    expect(r.cheaper.mode).toBe('provisioned');
    expect(r.cheaper.byUsd).toBeCloseTo(m.totalOnDemand - m.total, 4);
  });

  it('on-demand is cheaper for a small, spiky queue', () => {
    // 1 msg/s with a peak of 2,000: 4 shards all month ($43.80) against a stream-hour ($29.20) and little data.
    const r = sized({ ...base, rate: 1, peak: 2_000, bytes: 1024, retentionHours: 24 });
    expect(r.monthlyUsd.kinesisShards).toBeCloseTo(43.8, 6);
    // 2,628,000 messages × 2 KB (1,324 B rounded up) = 5.0125 GB in and twice out: × ($0.08 + 2 × $0.04).
    expect(r.monthlyUsd.kinesisOnDemand.total).toBeCloseTo(29.2 + ((2_628_000 * 2) / GB_IN_KB) * 0.16, 9);
    expect(r.monthlyUsd.kinesisOnDemand.total).toBeCloseTo(30.002, 3);
    expect(r.cheaper.mode).toBe('on-demand');
    expect(r.cheaper.byUsd).toBeCloseTo(r.monthlyUsd.total - r.monthlyUsd.totalOnDemand, 6);
  });

  it('names the peaks an on-demand stream does not take at once, or at all by default', () => {
    // 1,000 × 400 B: under 4 MB/s and 4,000 records/s.
    const quiet = sized({ ...base, rate: 1_000, bytes: 100 });
    expect(quiet.kinesis.onDemand).toMatchObject({ overStartingCapacity: false, overDefaultMaximum: false });
    expect(quiet.notes.some((n) => n.startsWith('on-demand'))).toBe(false);
    // 5,000 records/s: past the 4,000 a new stream takes, within its default maximum.
    const start = sized({ ...base, rate: 5_000, bytes: 100 });
    expect(start.kinesis.onDemand).toMatchObject({ overStartingCapacity: true, overDefaultMaximum: false });
    expect(start.notes).toContainEqual(
      expect.stringMatching(/^on-demand: a new stream takes 4 MB\/s and 4,000 records\/s.*5,000 records\/s/),
    );
    // 447.85 MiB/s: past the default 200 MB/s, which only AWS Support raises.
    const max = sized({ ...base, rate: 200_000, bytes: 2048 });
    expect(max.kinesis.onDemand.overDefaultMaximum).toBe(true);
    expect(max.notes).toContainEqual(
      expect.stringMatching(
        /^on-demand: the peak's 447.85 MiB\/s .*200 MB\/s and 200,000 records\/s: ask AWS Support/,
      ),
    );
    // 200,001 records/s of nothing much: the records limit alone.
    const records = sized({ ...base, rate: 1, peak: 200_001, bytes: 1, envelopeBytes: 0 });
    expect(records.kinesis.onDemand.overDefaultMaximum).toBe(true);
  });
});

describe('size: segments and S3', () => {
  it('segments past 8 KB are S3 objects: 0.1 PUT and 0.2 GET a message, by hand', () => {
    expect(SOURCES.segmentItemMaxBytes).toBe(SEGMENT_ITEM_MAX_BYTES);
    const r = sized({ ...base, rate: 200_000, bytes: 2048 });
    expect(r.segments).toEqual({ bytes: 23_480, store: 's3' });
    expect(r.s3).toEqual({ putsPerMessage: 0.1, getsPerMessage: 0.2 });
    // The bench's units alone: the segments are not DynamoDB items.
    expect(r.dynamodb.writeUnitsPerMessage).toBe(1.42);
    // 525.6 billion × (0.1 × $0.005 + 0.2 × $0.0004) per 1,000 = $304,848.
    expect(r.monthlyUsd.s3).toBeCloseTo(304_848, 3);
    expect(r.notes).toContainEqual(
      expect.stringMatching(/^segments, an estimate: one per 10 messages.*past 8 KB so an S3 PUT each/),
    );
  });

  it('segments up to 8 KB are DynamoDB items: their units are added to the bench figures', () => {
    // 10 × (519 + 300) = 8,190 B: an item; 10 × 820 = 8,200 B: an object.
    expect(sized({ ...base, rate: 1, bytes: 519 }).segments.store).toBe('dynamodb');
    expect(sized({ ...base, rate: 1, bytes: 520 }).segments.store).toBe('s3');
    const r = sized({ ...base, rate: 5_000, bytes: 100 });
    // 4,000 B a segment: 4 WRU per 10 messages, a 1 RRU consistent read 0.2 times a message, 0.3 requests.
    expect(r.segments).toEqual({ bytes: 4000, store: 'dynamodb' });
    expect(r.dynamodb.writeUnitsPerMessage).toBeCloseTo(1.82, 9);
    expect(r.dynamodb.readUnitsPerMessage).toBeCloseTo(2.2, 9);
    expect(r.dynamodb.requestsPerMessage).toBeCloseTo(2.21, 9);
    expect(r.dynamodb.writeUnitsPerSecond).toBeCloseTo(9_100, 6);
    expect(r.s3).toEqual({ putsPerMessage: 0, getsPerMessage: 0 });
    expect(r.monthlyUsd.s3).toBe(0);
  });
});

describe('size: API Gateway by tier', () => {
  it('the first 300 million requests a month at $1.00 a million, the rest at $0.90', () => {
    expect(API_GATEWAY_HTTP_FIRST_TIER_REQUESTS).toBe(300_000_000);
    expect(apiGatewayMonthlyUsd(100e6)).toBeCloseTo(100, 9);
    expect(apiGatewayMonthlyUsd(300e6)).toBeCloseTo(300, 9);
    expect(apiGatewayMonthlyUsd(400e6)).toBeCloseTo(390, 9);
  });
});

describe('size: the per-message figures', () => {
  const file = new URL('../../bench/figures.json', import.meta.url);
  const text = readFileSync(file, 'utf8');

  it('come from bench/figures.json, as the bench writes it', () => {
    const onDisk = JSON.parse(text) as BenchFigures;
    expect(BENCH_FIGURES).toEqual(onDisk);
    // The bench's format (bench/run.ts writeSizingFigures): a rerun changes the figures only.
    expect(text).toBe(`${JSON.stringify(onDisk, null, 2)}\n`);
    expect(Object.keys(onDisk)).toEqual(Object.keys(C4_IDS));
    expect(onDisk.run).toBe('c4-ids');
    expect(onDisk.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    for (const key of [
      'writeUnitsPerMessage',
      'readUnitsPerMessage',
      'dynamodbRequestsPerMessage',
      'apiRequestsPerMessage',
    ] as const)
      expect(onDisk[key]).toBeGreaterThan(0);
  });

  it('are what size uses unless told otherwise, and the report names their run', () => {
    const r = size({ ...base, rate: 1_000, bytes: 2048 });
    expect(r.figures).toBe(BENCH_FIGURES);
    expect(r.dynamodb.writeUnitsPerSecond).toBeCloseTo(1_000 * BENCH_FIGURES.writeUnitsPerMessage, 6);
    const other = { ...C4_IDS, run: 'c4-other', date: '2030-01-02', writeUnitsPerMessage: 3 };
    const report = sizingReport(size({ ...base, rate: 1_000, bytes: 2048 }, other));
    expect(report).toContain('3,000 WRU/s (3 a message)');
    expect(report).toContain(
      'per-message figures: bench run c4-other (4 worker(s), producer ids; dynalite, 1,024 B payloads) of 2030-01-02, bench/figures.json',
    );
  });

  it('the report shows the peak, both stream modes and the cheaper one', () => {
    const report = sizingReport(sized({ ...base, rate: 50, peak: 2_000, bytes: 1024, retentionHours: 24 }));
    expect(report.split('\n')[0]).toBe('50 msg/s sustained, 2,000 at the peak, of 1,024 B, 24 h retention');
    expect(report).toMatch(/DynamoDB writes\s+│ 2,840 WRU\/s at the peak, 71 sustained \(1.42 a message\)/);
    expect(report).toMatch(
      /\$\/month Kinesis on-demand\s+│ \$69.30 instead of the three above \(stream \$29.20/,
    );
    expect(report).toMatch(/\$\/month total, provisioned\s+│ \$336.36/);
    expect(report).toMatch(/\$\/month total, on-demand\s+│ \$360.02/);
    expect(report).toMatch(/cheaper\s+│ provisioned stream, by \$23.66 a month/);
  });
});

describe('formatting', () => {
  it('durations, sizes, numbers, money, percentages', () => {
    expect(duration(0)).toBe('0 s');
    expect(duration(200)).toBe('3 m 20 s');
    expect(duration(7500)).toBe('2 h 5 m');
    expect(duration(3 * 86_400 + 4 * 3600)).toBe('3 d 4 h');
    expect(duration(null)).toBe('-');
    expect(bytes(512)).toBe('512 B');
    expect(bytes(1536)).toBe('1.5 KiB');
    expect(num(1_234_567.8)).toBe('1,234,568');
    expect(usd(1234.5)).toBe('$1,234.50');
    expect(percent(5, 5)).toBe('100 %');
    expect(percent(1, 3)).toBe('33 %');
    expect(percent(0, 0)).toBe('100 %');
    expect(preview({ a: 'x'.repeat(100) }, 10)).toHaveLength(10);
    expect(drainText({ state: 'draining', eta_seconds: 90, produce_per_second: 1, ack_per_second: 2 })).toBe(
      'draining, ETA 1 m 30 s',
    );
  });

  it('places a JSON error at its line and column', () => {
    const text = '{\n  "tenant": "x",\n  oops\n}';
    let message = '';
    try {
      JSON.parse(text);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(jsonErrorPlace(text, message)).toBe(':3:3');
  });
});

describe('the reshard steps leaseq size names', () => {
  it('go through a deploy per doubling or halving, and none when the count is right', () => {
    const shards = size({ ...SIZING_DEFAULTS, rate: 20_000, bytes: 1000, ordered: false }).kinesis.shards;
    expect(reshardLine({ from: 4, steps: planShardCountSteps(4, shards) })).toBe(
      `reshard: 4 → 8 → 16 → ${shards}, 3 deploys of the tenant file's shards (docs/resharding.md)`,
    );
    expect(reshardLine({ from: 8, steps: planShardCountSteps(8, 3) })).toBe(
      "reshard: 8 → 4 → 3, 2 deploys of the tenant file's shards (docs/resharding.md)",
    );
    expect(reshardLine({ from: 3, steps: [] })).toBe('reshard: none, 3 shards is what the rate needs');
  });
});
