import benchFigures from '../bench/figures.json' with { type: 'json' };
import {
  API_GATEWAY_HTTP_FIRST_TIER_REQUESTS,
  DEPLOYMENT,
  PRICES,
  PRICES_AS_OF,
  REGION,
} from '../bench/prices.js';

/**
 * `leaseq size`: what a queue needs before it is asked for. Pure arithmetic, no I/O: every figure
 * comes from the inputs, the bench's per-message figures and the constants below, each with its
 * source, so the answer can be checked by hand (test/cli/sizing.test.ts does). Capacity (shards,
 * the quotas, Lambda concurrency) is sized for the peak; the month's requests are priced at the
 * sustained rate.
 */

export interface SizingInput {
  /** Messages produced per second, sustained: what a month's requests are priced at. */
  rate: number;
  /** Messages per second at the busiest, at least `rate`: what capacity is sized for. `rate` when not given. */
  peak?: number;
  /** Average payload bytes per message. */
  bytes: number;
  /** The stream's retention (tenant `retention_hours`; leaseq's default is 24). */
  retentionHours: number;
  ordered: boolean;
  /** Spare capacity on top of the binding limit; 0.2 = shards for 120 % of the peak. */
  headroom: number;
  /** Bytes of leaseq's JSON envelope around each payload in the stream (ids, times, key, attempt). */
  envelopeBytes: number;
}

export const SIZING_DEFAULTS = {
  retentionHours: 24,
  headroom: 0.2,
  /** An estimate, not a measurement: a ULID, a few ISO times, the attempt, key and headers' JSON. */
  envelopeBytes: 300,
} as const;

/**
 * What a delivered message asks of DynamoDB and the API, as `npm run bench` measured it (docs/
 * performance.md, "What a message costs, and why") and wrote it to bench/figures.json when it ran
 * c4-ids: 4 workers, producer ids as leaseq/client assigns them, produce, receive and ack in
 * batches of 10. Write units are all-in: base table, index units where the emulator reports them
 * (dynalite reports none; the lease path writes none, checked on DynamoDB Local) and failed
 * conditional writes. API requests count empty long polls too.
 */
export interface BenchFigures {
  /** The bench run (bench/runs.ts) and what it does. */
  run: string;
  description: string;
  /** The day of the run, YYYY-MM-DD. */
  date: string;
  /** The DynamoDB emulator the units were read from. */
  dynamodb: string;
  /** The run's payload size. */
  payloadBytes: number;
  writeUnitsPerMessage: number;
  readUnitsPerMessage: number;
  dynamodbRequestsPerMessage: number;
  apiRequestsPerMessage: number;
}

/** bench/figures.json, which the bench rewrites: imported, so the built CLI carries it in dist/. */
export const BENCH_FIGURES: BenchFigures = benchFigures;

const MIB = 1_048_576;

/** Where each constant comes from. */
export const SOURCES = {
  /** Kinesis provisioned shard write limits (AWS Kinesis Data Streams quotas). */
  kinesisShardBytesPerSecond: MIB, // 1 MiB/s
  kinesisShardRecordsPerSecond: 1_000,
  /**
   * The account's default shard quota per region (AWS Kinesis Data Streams quotas, "Shards per
   * Region"): 500 in us-east-1, us-west-2 and eu-west-1, 200 in the other regions.
   */
  kinesisAccountShards: 500,
  /**
   * An on-demand stream's write capacity (AWS Kinesis Data Streams quotas, "Data stream
   * throughput"): a new stream takes 4 MB/s and 4,000 records/s and grows to twice its previous
   * peak within 15 minutes, up to 200 MB/s and 200,000 records/s by default; more through AWS
   * Support. MB as the shard limits count them (1 MiB a shard).
   */
  kinesisOnDemandStartBytesPerSecond: 4 * MIB,
  kinesisOnDemandStartRecordsPerSecond: 4_000,
  kinesisOnDemandMaxBytesPerSecond: 200 * MIB,
  kinesisOnDemandMaxRecordsPerSecond: 200_000,
  /** On-demand bills data in per record rounded up to 1 KB (bench/prices.ts); out counted alike, as bench/probe.ts does. */
  kinesisOnDemandRecordRoundingBytes: 1024,
  /**
   * Reads of each record from the stream: dispatch's event source mapping once, and on a quiet
   * shard produce's fast admission once before it (functions/admission/fast-admission.ts); under
   * load dispatch alone. 2 is the upper side.
   */
  kinesisReadsPerRecord: 2,
  /** Payloads over 256 KB go to S3 and the record carries a claim instead (README). */
  claimCheckThresholdBytes: 256 * 1024,
  /** A PUT payload unit is each 25 KB chunk of a record (bench/prices.ts). */
  putPayloadUnitBytes: 25 * 1024,
  /**
   * A segment (the envelopes of one admitted batch) up to this size is a DynamoDB item, past it an
   * S3 object (functions/store/segments.ts, SEGMENT_ITEM_MAX_BYTES).
   */
  segmentItemMaxBytes: 8 * 1024,
  /**
   * Messages a segment holds, an estimate on the small side (more segments, more writes): one
   * produce batch of 10, as the API figures assume, which produce's fast admission writes on a
   * quiet shard; under load dispatch admits a second's worth, up to 100, in one segment.
   */
  segmentMessages: 10,
  /**
   * Segment reads per message: a receive of 10 reads the segments its entries are in, at most 2,
   * none from a function instance's cache (an instance keeps those it read, so fewer).
   */
  segmentReadsPerMessage: 0.2,
  /** DynamoDB bills an item write a unit per KB, a consistent read a unit per 4 KB (on demand). */
  dynamodbWriteUnitBytes: 1024,
  dynamodbReadUnitBytes: 4096,
  /**
   * An on-demand table's default throughput quota (AWS DynamoDB quotas, Service Quotas
   * "Table-level write throughput limit" and "Table-level read throughput limit"), each a second.
   */
  dynamodbTableUnitsPerSecond: 40_000,
  /** A warm API call's duration: docs/latency.md "On AWS, hop by hop", the produce hop (~45 ms, the longest). */
  apiSecondsPerRequest: 0.045,
  /** Lambda's default account concurrency per region (Service Quotas, "Concurrent executions"). */
  lambdaAccountConcurrency: 1_000,
} as const;

export interface SizingResult {
  /** With the peak filled in. */
  input: SizingInput & { peak: number };
  figures: BenchFigures;
  kinesis: {
    recordBytes: number;
    claimChecked: boolean;
    /** At the peak. */
    bytesPerSecond: number;
    shardsForBytes: number;
    shardsForRecords: number;
    binding: 'bytes' | 'records';
    /** Provisioned, for the peak, with headroom. */
    shards: number;
    putPayloadUnitsPerRecord: number;
    /** Over the account's default shard quota: ask AWS for more first. */
    overAccountShards: boolean;
    onDemand: {
      /** Each record as on-demand bills it, rounded up to 1 KB. */
      billedKbPerRecord: number;
      /** The peak passes what a new on-demand stream takes at first. */
      overStartingCapacity: boolean;
      /** The peak passes an on-demand stream's default maximum: ask AWS for more first. */
      overDefaultMaximum: boolean;
    };
  };
  /** Where the payloads' segments go, by the estimate of SOURCES.segmentMessages. */
  segments: {
    bytes: number;
    store: 'dynamodb' | 's3';
  };
  dynamodb: {
    /** The bench's figures, plus the segment items' units when segments are items. */
    writeUnitsPerMessage: number;
    readUnitsPerMessage: number;
    requestsPerMessage: number;
    /** At the peak. */
    writeUnitsPerSecond: number;
    readUnitsPerSecond: number;
    requestsPerSecond: number;
    /** Over the on-demand table's default quota at the peak: ask AWS for more first. */
    overTableQuota: boolean;
  };
  s3: {
    /** Claim checks (a PUT at produce, a GET a delivery) and segments in S3. */
    putsPerMessage: number;
    getsPerMessage: number;
  };
  lambda: {
    /** At the peak. */
    apiRequestsPerSecond: number;
    apiConcurrency: number;
    /** One dispatch invocation at a time per shard (event source mapping, parallelization 1). */
    dispatchConcurrency: number;
    /** The scheduled sweep. */
    sweepConcurrency: number;
    concurrency: number;
    overAccountDefault: boolean;
  };
  /** At the sustained rate. */
  perMonth: { messages: number; apiRequests: number };
  monthlyUsd: {
    /** Provisioned: the peak's shards, all month. */
    kinesisShards: number;
    kinesisRetention: number;
    kinesisPut: number;
    kinesisOnDemand: { stream: number; dataIn: number; dataOut: number; retention: number; total: number };
    dynamodb: number;
    s3: number;
    apiGateway: number;
    lambda: number;
    /** With a provisioned stream, as leaseq's stack deploys it (infra/queue.ts). */
    total: number;
    /** The same with an on-demand stream. */
    totalOnDemand: number;
  };
  /** The cheaper stream mode for this traffic, and by how much a month. */
  cheaper: { mode: 'provisioned' | 'on-demand'; byUsd: number };
  notes: string[];
}

const HOURS = DEPLOYMENT.hoursPerMonth;
const SECONDS_PER_MONTH = HOURS * 3600;
const GB_IN_KB = 1024 * 1024;
/** Extended retention is priced past 24 h up to 7 days; past that, long-term retention is priced apart. */
const RETENTION_INCLUDED_HOURS = 24;
const EXTENDED_RETENTION_MAX_HOURS = 168;

const whole = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 0 });
const mib = (n: number) => (n / MIB).toLocaleString('en-US', { maximumFractionDigits: 2 });

/** Why a peak cannot be used with a rate, or undefined when it can. */
export function peakError(rate: number, peak: number | undefined): string | undefined {
  if (peak === undefined || peak >= rate) return undefined;
  return `--peak ${peak} is below --rate ${rate}: the peak is the busiest rate, at least the sustained one`;
}

/** HTTP API requests a month, priced by tier. */
export function apiGatewayMonthlyUsd(requests: number): number {
  const first = Math.min(requests, API_GATEWAY_HTTP_FIRST_TIER_REQUESTS);
  return (
    first * PRICES.apiGatewayHttpRequest.usd + (requests - first) * PRICES.apiGatewayHttpRequestOver300M.usd
  );
}

export function size(input: SizingInput, figures: BenchFigures = BENCH_FIGURES): SizingResult {
  const { rate, bytes } = input;
  const peak = input.peak ?? rate;
  const wrongPeak = peakError(rate, input.peak);
  if (wrongPeak) throw new RangeError(wrongPeak);

  // Kinesis, provisioned: shards for the peak.
  const claimChecked = bytes > SOURCES.claimCheckThresholdBytes;
  // A claim is a small pointer; the envelope alone is a fair estimate of its record.
  const recordBytes = (claimChecked ? 0 : bytes) + input.envelopeBytes;
  const bytesPerSecond = peak * recordBytes;
  const shardsForBytes = Math.ceil(bytesPerSecond / SOURCES.kinesisShardBytesPerSecond);
  const shardsForRecords = Math.ceil(peak / SOURCES.kinesisShardRecordsPerSecond);
  // Which limit binds: the larger share of a shard, before rounding up.
  const forBytes = bytesPerSecond / SOURCES.kinesisShardBytesPerSecond;
  const forRecords = peak / SOURCES.kinesisShardRecordsPerSecond;
  const binding = forBytes >= forRecords ? 'bytes' : 'records';
  const needed = Math.max(forBytes, forRecords);
  const shards = Math.max(1, Math.ceil(needed * (1 + input.headroom)));
  const putPayloadUnitsPerRecord = Math.ceil(recordBytes / SOURCES.putPayloadUnitBytes);
  const overAccountShards = shards > SOURCES.kinesisAccountShards;

  // Kinesis, on demand: the same peak against an on-demand stream's capacity.
  const billedKbPerRecord = Math.ceil(recordBytes / SOURCES.kinesisOnDemandRecordRoundingBytes);
  const overStartingCapacity =
    bytesPerSecond > SOURCES.kinesisOnDemandStartBytesPerSecond ||
    peak > SOURCES.kinesisOnDemandStartRecordsPerSecond;
  const overDefaultMaximum =
    bytesPerSecond > SOURCES.kinesisOnDemandMaxBytesPerSecond ||
    peak > SOURCES.kinesisOnDemandMaxRecordsPerSecond;

  // Segments: an S3 object past 8 KB, else a DynamoDB item whose units the bench's figures leave
  // out (its 1 KB payloads' segments were all past 8 KB).
  const segmentBytes = SOURCES.segmentMessages * recordBytes;
  const segmentsInS3 = segmentBytes > SOURCES.segmentItemMaxBytes;
  const segmentWrites = 1 / SOURCES.segmentMessages;
  const segmentReads = SOURCES.segmentReadsPerMessage;
  const segmentItemUnits = segmentsInS3
    ? { write: 0, read: 0, requests: 0 }
    : {
        write: Math.ceil(segmentBytes / SOURCES.dynamodbWriteUnitBytes) * segmentWrites,
        read: Math.ceil(segmentBytes / SOURCES.dynamodbReadUnitBytes) * segmentReads,
        requests: segmentWrites + segmentReads,
      };

  const writeUnitsPerMessage = figures.writeUnitsPerMessage + segmentItemUnits.write;
  const readUnitsPerMessage = figures.readUnitsPerMessage + segmentItemUnits.read;
  const requestsPerMessage = figures.dynamodbRequestsPerMessage + segmentItemUnits.requests;
  const writeUnitsPerSecond = peak * writeUnitsPerMessage;
  const readUnitsPerSecond = peak * readUnitsPerMessage;
  const requestsPerSecond = peak * requestsPerMessage;
  const writesOver = writeUnitsPerSecond > SOURCES.dynamodbTableUnitsPerSecond;
  const readsOver = readUnitsPerSecond > SOURCES.dynamodbTableUnitsPerSecond;

  const putsPerMessage = (claimChecked ? 1 : 0) + (segmentsInS3 ? segmentWrites : 0);
  const getsPerMessage = (claimChecked ? 1 : 0) + (segmentsInS3 ? segmentReads : 0);

  const apiRequestsPerSecond = peak * figures.apiRequestsPerMessage;
  const apiConcurrency = Math.ceil(apiRequestsPerSecond * SOURCES.apiSecondsPerRequest);
  const dispatchConcurrency = shards;
  const sweepConcurrency = 1;
  const concurrency = apiConcurrency + dispatchConcurrency + sweepConcurrency;
  const overAccountDefault = concurrency > SOURCES.lambdaAccountConcurrency;

  // A month at the sustained rate.
  const messagesPerMonth = rate * SECONDS_PER_MONTH;
  const apiRequestsPerMonth = messagesPerMonth * figures.apiRequestsPerMessage;
  const extendedHours =
    Math.min(input.retentionHours, EXTENDED_RETENTION_MAX_HOURS) - RETENTION_INCLUDED_HOURS;
  const kinesisShards = shards * HOURS * PRICES.kinesisShardHour.usd;
  const kinesisRetention =
    extendedHours > 0 ? shards * HOURS * PRICES.kinesisExtendedRetentionShardHour.usd : 0;
  const kinesisPut = messagesPerMonth * putPayloadUnitsPerRecord * PRICES.kinesisPutPayloadUnit.usd;
  const gbPerMonth = (messagesPerMonth * billedKbPerRecord) / GB_IN_KB;
  // What the stream holds past 24 h at any time, all month: GB-months.
  const retainedGb = (rate * recordBytes * Math.max(0, extendedHours) * 3600) / (GB_IN_KB * 1024);
  const onDemand = {
    stream: HOURS * PRICES.kinesisOnDemandStreamHour.usd,
    dataIn: gbPerMonth * PRICES.kinesisOnDemandIngestGb.usd,
    dataOut: gbPerMonth * SOURCES.kinesisReadsPerRecord * PRICES.kinesisOnDemandRetrievalGb.usd,
    retention: retainedGb * PRICES.kinesisOnDemandExtendedRetentionGbMonth.usd,
  };
  const kinesisOnDemand = {
    ...onDemand,
    total: onDemand.stream + onDemand.dataIn + onDemand.dataOut + onDemand.retention,
  };
  const dynamodb =
    messagesPerMonth *
    (writeUnitsPerMessage * PRICES.dynamodbWriteRequestUnit.usd +
      readUnitsPerMessage * PRICES.dynamodbReadRequestUnit.usd);
  const s3 =
    messagesPerMonth * (putsPerMessage * PRICES.s3PutRequest.usd + getsPerMessage * PRICES.s3GetRequest.usd);
  const apiGateway = apiGatewayMonthlyUsd(apiRequestsPerMonth);
  const lambda =
    apiRequestsPerMonth * PRICES.lambdaRequest.usd +
    apiRequestsPerMonth *
      SOURCES.apiSecondsPerRequest *
      DEPLOYMENT.lambdaMemoryGb *
      PRICES.lambdaArmGbSecond.usd;
  const others = dynamodb + s3 + apiGateway + lambda;
  const total = kinesisShards + kinesisRetention + kinesisPut + others;
  const totalOnDemand = kinesisOnDemand.total + others;

  const notes: string[] = [];
  if (peak > rate)
    notes.push(
      `capacity is sized for the peak of ${whole(peak)} msg/s, the month's requests at the sustained ${whole(rate)}; ` +
        "provisioned shards are paid for at the peak's count all month, an on-demand stream follows the traffic",
    );
  if (claimChecked)
    notes.push(
      'payloads over 256 KB go to S3 (claim check): a PUT at produce and a GET a delivery are counted, their storage is not',
    );
  notes.push(
    `segments, an estimate: one per ${SOURCES.segmentMessages} messages (a produce batch; under load dispatch admits up to 100 in one, so fewer), ` +
      `${segmentsInS3 ? 'past 8 KB so an S3 PUT each' : 'up to 8 KB so a DynamoDB item (a WRU per KB)'}, ` +
      `read ${SOURCES.segmentReadsPerMessage} times a message (receives of 10, none cached); ` +
      'producers sending one message a request write a segment each, an S3 PUT a message once a record passes 8 KB',
  );
  if (input.retentionHours > EXTENDED_RETENTION_MAX_HOURS)
    notes.push('Kinesis extended retention past 7 days is priced apart: not counted');
  if (input.ordered)
    notes.push(
      "ordered: one key's messages share one shard, so a single key is limited to 1,000 msg/s and 1 MiB/s; " +
        "an ordered queue's messages cost about 0.25 write and 0.6 read units more each (docs/performance.md): not counted",
    );
  if (overAccountShards)
    notes.push(
      `${shards} shards pass the account's default Kinesis quota (500 a region in us-east-1, us-west-2 and eu-west-1, 200 elsewhere): ` +
        'ask for more first (Service Quotas: Amazon Kinesis Data Streams, "Shards per Region")',
    );
  if (writesOver || readsOver) {
    const passing = [
      ...(writesOver ? [`writes (${whole(writeUnitsPerSecond)} WRU/s)`] : []),
      ...(readsOver ? [`reads (${whole(readUnitsPerSecond)} RRU/s)`] : []),
    ];
    const quotas = [
      ...(writesOver ? ['"Table-level write throughput limit"'] : []),
      ...(readsOver ? ['"Table-level read throughput limit"'] : []),
    ];
    notes.push(
      `DynamoDB ${passing.join(' and ')} at the peak pass an on-demand table's default 40,000 a second: ` +
        `ask for more first (Service Quotas: Amazon DynamoDB, ${quotas.join(' and ')})`,
    );
  }
  if (overAccountDefault)
    notes.push(
      `Lambda concurrency at the peak (${whole(concurrency)}) passes the account's default 1,000: ask for more first ` +
        '(Service Quotas: AWS Lambda, "Concurrent executions")',
    );
  const peakWrites = `${mib(bytesPerSecond)} MiB/s and ${whole(peak)} records/s`;
  if (overDefaultMaximum)
    notes.push(
      `on-demand: the peak's ${peakWrites} pass a stream's default maximum of 200 MB/s and 200,000 records/s: ` +
        "ask AWS Support to raise the stream's on-demand write throughput first (a support case, not in Service Quotas)",
    );
  else if (overStartingCapacity)
    notes.push(
      `on-demand: a new stream takes 4 MB/s and 4,000 records/s and grows to twice its previous peak within 15 minutes, ` +
        `so a first peak of ${peakWrites} is throttled while it grows (no quota to raise: ramp up to it)`,
    );
  notes.push(
    'not counted: dispatch and sweep Lambda duration, retries and redeliveries, S3 storage; Kinesis reads on provisioned shards are free',
  );

  return {
    input: { ...input, peak },
    figures,
    kinesis: {
      recordBytes,
      claimChecked,
      bytesPerSecond,
      shardsForBytes,
      shardsForRecords,
      binding,
      shards,
      putPayloadUnitsPerRecord,
      overAccountShards,
      onDemand: { billedKbPerRecord, overStartingCapacity, overDefaultMaximum },
    },
    segments: { bytes: segmentBytes, store: segmentsInS3 ? 's3' : 'dynamodb' },
    dynamodb: {
      writeUnitsPerMessage,
      readUnitsPerMessage,
      requestsPerMessage,
      writeUnitsPerSecond,
      readUnitsPerSecond,
      requestsPerSecond,
      overTableQuota: writesOver || readsOver,
    },
    s3: { putsPerMessage, getsPerMessage },
    lambda: {
      apiRequestsPerSecond,
      apiConcurrency,
      dispatchConcurrency,
      sweepConcurrency,
      concurrency,
      overAccountDefault,
    },
    perMonth: { messages: messagesPerMonth, apiRequests: apiRequestsPerMonth },
    monthlyUsd: {
      kinesisShards,
      kinesisRetention,
      kinesisPut,
      kinesisOnDemand,
      dynamodb,
      s3,
      apiGateway,
      lambda,
      total,
      totalOnDemand,
    },
    cheaper: {
      mode: total <= totalOnDemand ? 'provisioned' : 'on-demand',
      byUsd: Math.abs(totalOnDemand - total),
    },
    notes,
  };
}

/** Where the prices come from, for the report's footer. */
export const PRICE_BASIS = `${REGION} list prices as of ${PRICES_AS_OF} (bench/prices.ts), no free tier`;

/** Where the per-message figures come from, for the report's footer. */
export function figuresBasis(f: BenchFigures): string {
  return `bench run ${f.run} (${f.description}; ${f.dynamodb}, ${f.payloadBytes.toLocaleString('en-US')} B payloads) of ${f.date}, bench/figures.json`;
}
