import { DEPLOYMENT, PRICES, PRICES_AS_OF, REGION } from '../bench/prices.js';

/**
 * `leaseq size`: what a queue needs before it is asked for. Pure arithmetic, no I/O: every figure
 * comes from the inputs and the constants below, each with its source, so the answer can be
 * checked by hand (test/cli/sizing.test.ts does).
 */

export interface SizingInput {
  /** Messages produced per second, sustained. */
  rate: number;
  /** Average payload bytes per message. */
  bytes: number;
  /** The stream's retention (tenant `retention_hours`; leaseq's default is 24). */
  retentionHours: number;
  ordered: boolean;
  /** Spare capacity on top of the binding limit; 0.2 = shards for 120 % of the rate. */
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

/** Where each constant comes from. */
export const SOURCES = {
  /** Kinesis provisioned shard write limits (AWS Kinesis Data Streams quotas). */
  kinesisShardBytesPerSecond: 1_048_576, // 1 MiB/s
  kinesisShardRecordsPerSecond: 1_000,
  /**
   * The account's default shard quota per region (AWS Kinesis Data Streams quotas, "Shards per
   * Region"): 500 in us-east-1, us-west-2 and eu-west-1, 200 in the other regions.
   */
  kinesisAccountShards: 500,
  /** Payloads over 256 KB go to S3 and the record carries a claim instead (README). */
  claimCheckThresholdBytes: 256 * 1024,
  /** A PUT payload unit is each 25 KB chunk of a record (bench/prices.ts). */
  putPayloadUnitBytes: 25 * 1024,
  /**
   * DynamoDB units per delivered message on the lease layer: `npm run bench` (dynalite,
   * docs/performance.md "What a message costs, and why"), run c4-ids (4 workers, producer ids, as
   * leaseq/client assigns them): 1.42 WRU all-in (dynalite reports no index units; the lease path
   * writes none, checked on DynamoDB Local), 2.00 RRU, 1.91 DynamoDB requests.
   */
  writeUnitsPerMessage: 1.42,
  readUnitsPerMessage: 2.0,
  dynamodbRequestsPerMessage: 1.91,
  /** An on-demand table's default throughput quota per table (AWS DynamoDB quotas), each of reads and writes. */
  dynamodbTableUnitsPerSecond: 40_000,
  /**
   * API calls per delivered message: the same run's 0.33 (produce, receive and ack in batches of
   * 10, plus empty long polls).
   */
  apiRequestsPerMessage: 0.33,
  /** A warm API call's duration: docs/performance.md "On AWS, hop by hop", the produce hop (~45 ms, the longest). */
  apiSecondsPerRequest: 0.045,
  /** Lambda's default account concurrency (per region). */
  lambdaAccountConcurrency: 1_000,
} as const;

export interface SizingResult {
  input: SizingInput;
  kinesis: {
    recordBytes: number;
    claimChecked: boolean;
    bytesPerSecond: number;
    shardsForBytes: number;
    shardsForRecords: number;
    binding: 'bytes' | 'records';
    /** With headroom. */
    shards: number;
    putPayloadUnitsPerRecord: number;
    /** Over the account's default shard quota: ask AWS for more first. */
    overAccountShards: boolean;
  };
  dynamodb: {
    writeUnitsPerSecond: number;
    readUnitsPerSecond: number;
    requestsPerSecond: number;
    /** Over the on-demand table's default quota: ask AWS for more first. */
    overTableQuota: boolean;
  };
  lambda: {
    apiRequestsPerSecond: number;
    apiConcurrency: number;
    /** One dispatch invocation at a time per shard (event source mapping, parallelization 1). */
    dispatchConcurrency: number;
    /** The scheduled sweep. */
    sweepConcurrency: number;
    concurrency: number;
    overAccountDefault: boolean;
  };
  monthlyUsd: {
    kinesisShards: number;
    kinesisRetention: number;
    kinesisPut: number;
    dynamodb: number;
    apiGateway: number;
    lambda: number;
    total: number;
  };
  notes: string[];
}

const HOURS = DEPLOYMENT.hoursPerMonth;
const SECONDS_PER_MONTH = HOURS * 3600;

export function size(input: SizingInput): SizingResult {
  const { rate, bytes } = input;
  const claimChecked = bytes > SOURCES.claimCheckThresholdBytes;
  // A claim is a small pointer; the envelope alone is a fair estimate of its record.
  const recordBytes = (claimChecked ? 0 : bytes) + input.envelopeBytes;
  const bytesPerSecond = rate * recordBytes;
  const shardsForBytes = Math.ceil(bytesPerSecond / SOURCES.kinesisShardBytesPerSecond);
  const shardsForRecords = Math.ceil(rate / SOURCES.kinesisShardRecordsPerSecond);
  // Which limit binds: the larger share of a shard, before rounding up.
  const forBytes = bytesPerSecond / SOURCES.kinesisShardBytesPerSecond;
  const forRecords = rate / SOURCES.kinesisShardRecordsPerSecond;
  const binding = forBytes >= forRecords ? 'bytes' : 'records';
  const needed = Math.max(forBytes, forRecords);
  const shards = Math.max(1, Math.ceil(needed * (1 + input.headroom)));
  const putPayloadUnitsPerRecord = Math.ceil(recordBytes / SOURCES.putPayloadUnitBytes);

  const writeUnitsPerSecond = rate * SOURCES.writeUnitsPerMessage;
  const readUnitsPerSecond = rate * SOURCES.readUnitsPerMessage;
  const requestsPerSecond = rate * SOURCES.dynamodbRequestsPerMessage;

  const apiRequestsPerSecond = rate * SOURCES.apiRequestsPerMessage;
  const apiConcurrency = Math.ceil(apiRequestsPerSecond * SOURCES.apiSecondsPerRequest);
  const dispatchConcurrency = shards;
  const sweepConcurrency = 1;
  const concurrency = apiConcurrency + dispatchConcurrency + sweepConcurrency;

  const messagesPerMonth = rate * SECONDS_PER_MONTH;
  const kinesisShards = shards * HOURS * PRICES.kinesisShardHour.usd;
  const kinesisRetention =
    input.retentionHours > 24 ? shards * HOURS * PRICES.kinesisExtendedRetentionShardHour.usd : 0;
  const kinesisPut = messagesPerMonth * putPayloadUnitsPerRecord * PRICES.kinesisPutPayloadUnit.usd;
  const dynamodb =
    messagesPerMonth *
    (SOURCES.writeUnitsPerMessage * PRICES.dynamodbWriteRequestUnit.usd +
      SOURCES.readUnitsPerMessage * PRICES.dynamodbReadRequestUnit.usd);
  const apiGateway = messagesPerMonth * SOURCES.apiRequestsPerMessage * PRICES.apiGatewayHttpRequest.usd;
  const apiInvocations = messagesPerMonth * SOURCES.apiRequestsPerMessage;
  const lambda =
    apiInvocations * PRICES.lambdaRequest.usd +
    apiInvocations * SOURCES.apiSecondsPerRequest * DEPLOYMENT.lambdaMemoryGb * PRICES.lambdaArmGbSecond.usd;
  const total = kinesisShards + kinesisRetention + kinesisPut + dynamodb + apiGateway + lambda;

  const notes: string[] = [];
  if (claimChecked)
    notes.push('payloads over 256 KB go to S3 (claim check): S3 requests and storage are not counted');
  if (input.retentionHours > 168)
    notes.push('Kinesis extended retention past 7 days is priced apart: not counted');
  if (input.ordered)
    notes.push(
      "ordered: one key's messages share one shard, so a single key is limited to 1,000 msg/s and 1 MiB/s; " +
        "an ordered queue's messages cost about 0.25 write and 0.6 read units more each (docs/performance.md): not counted",
    );
  const overAccountShards = shards > SOURCES.kinesisAccountShards;
  if (overAccountShards)
    notes.push(
      `${shards} shards pass the account's default Kinesis quota (500 a region in us-east-1, us-west-2 and eu-west-1, 200 elsewhere): ` +
        'ask for more first (Service Quotas: Amazon Kinesis Data Streams, "Shards per Region")',
    );
  if (
    writeUnitsPerSecond > SOURCES.dynamodbTableUnitsPerSecond ||
    readUnitsPerSecond > SOURCES.dynamodbTableUnitsPerSecond
  )
    notes.push(
      'DynamoDB units pass the on-demand table default quota of 40,000/s: ask for more first ' +
        '(Service Quotas: Amazon DynamoDB, "Table-level on-demand throughput for writes" and "… for reads")',
    );
  if (concurrency > SOURCES.lambdaAccountConcurrency)
    notes.push(
      "Lambda concurrency passes the account's default 1,000: ask for more first " +
        '(Service Quotas: AWS Lambda, "Concurrent executions")',
    );
  notes.push(
    'not counted: dispatch and sweep Lambda duration, Kinesis reads (free on provisioned shards), retries and redeliveries, S3',
  );

  return {
    input,
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
    },
    dynamodb: {
      writeUnitsPerSecond,
      readUnitsPerSecond,
      requestsPerSecond,
      overTableQuota:
        writeUnitsPerSecond > SOURCES.dynamodbTableUnitsPerSecond ||
        readUnitsPerSecond > SOURCES.dynamodbTableUnitsPerSecond,
    },
    lambda: {
      apiRequestsPerSecond,
      apiConcurrency,
      dispatchConcurrency,
      sweepConcurrency,
      concurrency,
      overAccountDefault: concurrency > SOURCES.lambdaAccountConcurrency,
    },
    monthlyUsd: { kinesisShards, kinesisRetention, kinesisPut, dynamodb, apiGateway, lambda, total },
    notes,
  };
}

/** Where the prices come from, for the report's footer. */
export const PRICE_BASIS = `${REGION} list prices as of ${PRICES_AS_OF} (bench/prices.ts), on demand, no free tier`;
