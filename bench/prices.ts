import { HOURS_PER_MONTH, type Price, USAGE_PRICES } from '../functions/core/prices.js';

export { PRICES_AS_OF, type Price, type PriceCheck, REGION } from '../functions/core/prices.js';

/**
 * us-east-1 list prices, on demand, without free tiers or volume discounts: the bench's prices,
 * with those the API quotes (functions/core/prices.ts, GET /usage) taken from there. Taken on
 * 2026-11-29 (PRICES_AS_OF). This machine cannot browse the pricing pages, so each figure says how
 * it was checked (Price `check`). Check the `source` page before quoting a figure outside the bench.
 */

export const PRICES = {
  ...USAGE_PRICES,
  dynamodbWriteRequestUnit: {
    usd: 0.625 / 1e6,
    per: 'write request unit (on demand; ≤ 1 KB, index writes billed alike)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    check: 'search',
    checkedAgainst: 'airbyte.com/data-engineering-resources/dynamodb-pricing (2025-07)',
    since: '2024-11-01 (on-demand throughput cut 50 %)',
  },
  dynamodbReadRequestUnit: {
    usd: 0.125 / 1e6,
    per: 'read request unit (on demand; one strongly consistent 4 KB read, or two eventually consistent)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    check: 'search',
    checkedAgainst: 'airbyte.com/data-engineering-resources/dynamodb-pricing (2025-07)',
    since: '2024-11-01',
  },
  kinesisShardHour: {
    usd: 0.015,
    per: 'shard-hour (provisioned)',
    source: 'https://aws.amazon.com/kinesis/data-streams/pricing/',
    check: 'memory',
    checkedAgainst: 'kindatechnical.com lesson 29 quotes $0.015 per shard-hour',
    since: '2013-12 (unchanged since launch)',
  },
  kinesisFanOutConsumerShardHour: {
    usd: 0.015,
    per: 'consumer-shard-hour of enhanced fan-out (a registered consumer, per shard of its stream)',
    source: 'https://aws.amazon.com/kinesis/data-streams/pricing/',
    check: 'search',
    checkedAgainst:
      'awsnegotiations.com/kinesis-pricing-optimization.html lists $0.015 per shard-hour per consumer',
    since: '2018-08 (enhanced fan-out launched)',
  },
  kinesisFanOutRetrievalGb: {
    usd: 0.013,
    per: 'GB pushed to an enhanced fan-out consumer',
    source: 'https://aws.amazon.com/kinesis/data-streams/pricing/',
    check: 'memory',
    since: '2018-08',
  },
  kinesisPutPayloadUnit: {
    usd: 0.014 / 1e6,
    per: 'PUT payload unit (provisioned; each 25 KB chunk of a record)',
    source: 'https://aws.amazon.com/kinesis/data-streams/pricing/',
    check: 'memory',
    checkedAgainst: 'the stored pricing page defines the 25 KB unit; its figure was not in the copy',
    since: '2015 (PUT payload units replaced per-PUT pricing)',
  },
  kinesisExtendedRetentionShardHour: {
    usd: 0.02,
    per: 'shard-hour of retention past 24 h, up to 7 days (provisioned; leaseq keeps 24 h by default)',
    source: 'https://aws.amazon.com/kinesis/data-streams/pricing/',
    check: 'memory',
    since: '2015',
  },
  kinesisOnDemandStreamHour: {
    usd: 0.04,
    per: 'stream-hour (on-demand standard)',
    source: 'https://aws.amazon.com/kinesis/data-streams/pricing/',
    check: 'memory',
    since: '2021-11 (on-demand mode launched)',
  },
  kinesisOnDemandIngestGb: {
    usd: 0.08,
    per: 'GB written (on-demand; each record rounded up to 1 KB)',
    source: 'https://aws.amazon.com/kinesis/data-streams/pricing/',
    check: 'memory',
    checkedAgainst: 'the stored pricing page confirms the 1 KB rounding; its figure was not in the copy',
    since: '2021-11',
  },
  kinesisOnDemandRetrievalGb: {
    usd: 0.04,
    per: 'GB read (on-demand)',
    source: 'https://aws.amazon.com/kinesis/data-streams/pricing/',
    check: 'memory',
    since: '2021-11',
  },
  kinesisOnDemandExtendedRetentionGbMonth: {
    usd: 0.1,
    per: 'GB-month stored past 24 h, up to 7 days (on-demand)',
    source: 'https://aws.amazon.com/kinesis/data-streams/pricing/',
    check: 'memory',
    since: '2021-11',
  },
  s3PutRequest: {
    usd: 0.005 / 1000,
    per: 'PUT, COPY, POST or LIST request (S3 Standard)',
    source: 'https://aws.amazon.com/s3/pricing/',
    check: 'memory',
    since: '2016-12',
  },
  s3GetRequest: {
    usd: 0.0004 / 1000,
    per: 'GET or SELECT request (S3 Standard)',
    source: 'https://aws.amazon.com/s3/pricing/',
    check: 'memory',
    since: '2016-12',
  },
  apiGatewayHttpRequestOver300M: {
    usd: 0.9 / 1e6,
    per: 'HTTP API request past the first 300 M a month (metered in 512 KB increments)',
    source: 'https://aws.amazon.com/api-gateway/pricing/',
    check: 'memory',
    since: '2020-03',
  },
  lambdaArmGbSecond: {
    usd: 0.0000133334,
    per: 'GB-second, arm64 (first 7.5 billion a month; the stack deploys arm64)',
    source: 'https://aws.amazon.com/lambda/pricing/',
    check: 'search',
    checkedAgainst: 'cloudchipr.com/blog/aws-lambda-pricing',
    since: '2021-09 (Graviton2 functions)',
  },
  apiGatewayWebSocketMessage: {
    usd: 1.0 / 1e6,
    per: 'WebSocket API message, either way (first billion a month; metered in 32 KB increments)',
    source: 'https://aws.amazon.com/api-gateway/pricing/',
    check: 'memory',
    since: '2018-12 (WebSocket APIs launched)',
  },
  apiGatewayWebSocketConnectionMinute: {
    usd: 0.25 / 1e6,
    per: 'WebSocket API connection minute',
    source: 'https://aws.amazon.com/api-gateway/pricing/',
    check: 'memory',
    since: '2018-12',
  },
  sqsStandardRequest: {
    usd: 0.4 / 1e6,
    per: 'SQS standard request (first 100 billion a month; each 64 KB chunk of a payload is one request)',
    source: 'https://aws.amazon.com/sqs/pricing/',
    check: 'search',
    checkedAgainst: 'cloudburn.io/blog/amazon-sqs-pricing (2026-03)',
    since: '2016 or earlier',
  },
  sqsFifoRequest: {
    usd: 0.5 / 1e6,
    per: 'SQS FIFO request (64 KB chunks as above)',
    source: 'https://aws.amazon.com/sqs/pricing/',
    check: 'search',
    checkedAgainst: 'cloudburn.io/blog/amazon-sqs-pricing (2026-03)',
    since: '2016 or earlier',
  },
  kmsKey: {
    usd: 1.0,
    per: 'KMS customer managed key-month (prorated hourly; automatic rotation adds $1 a month for each of its first two rotations)',
    source: 'https://aws.amazon.com/kms/pricing/',
    check: 'memory',
    since: '2014-11 (the rotation surcharge since 2024-05)',
  },
  cloudwatchAlarmMetric: {
    usd: 0.1,
    per: 'standard-resolution alarm metric-month (a metric-math alarm bills each metric in it; anomaly detection bills 3)',
    source: 'https://aws.amazon.com/cloudwatch/pricing/',
    check: 'memory',
    since: '2019 (per alarm metric)',
  },
  cloudwatchHighResolutionAlarmMetric: {
    usd: 0.3,
    per: 'high-resolution alarm metric-month (period under 60 s)',
    source: 'https://aws.amazon.com/cloudwatch/pricing/',
    check: 'memory',
    since: '2017-07',
  },
  cloudwatchCompositeAlarm: {
    usd: 0.5,
    per: 'composite alarm-month',
    source: 'https://aws.amazon.com/cloudwatch/pricing/',
    check: 'memory',
    since: '2019-11',
  },
  cloudwatchCustomMetric: {
    usd: 0.3,
    per: 'custom metric-month (first 10,000; each name under each dimension set; prorated by the hours it is published in)',
    source: 'https://aws.amazon.com/cloudwatch/pricing/',
    check: 'memory',
    since: '2016-12',
  },
  cloudwatchLogsIngestGb: {
    usd: 0.5,
    per: 'GB of logs ingested (standard log class; embedded metric format lines included)',
    source: 'https://aws.amazon.com/cloudwatch/pricing/',
    check: 'memory',
    since: '2014',
  },
  cloudwatchDashboard: {
    usd: 3.0,
    per: "dashboard-month (an account's first three are free)",
    source: 'https://aws.amazon.com/cloudwatch/pricing/',
    check: 'memory',
    since: '2016',
  },
  secretsManagerSecret: {
    usd: 0.4,
    per: 'secret-month (prorated hourly)',
    source: 'https://aws.amazon.com/secrets-manager/pricing/',
    check: 'memory',
    since: '2018-04',
  },
} as const satisfies Record<string, Price>;

/** HTTP API requests a month billed at apiGatewayHttpRequest before apiGatewayHttpRequestOver300M (per account and region). */
export const API_GATEWAY_HTTP_FIRST_TIER_REQUESTS = 300_000_000;

/** How leaseq's stack is sized (infra/tenant-stack.ts, infra/queue.ts): what turns durations into GB-seconds. */
export const DEPLOYMENT = {
  /** Every leaseq function: api, dispatch and sweep. */
  lambdaMemoryGb: 0.5,
  /** A month as AWS bills hours. */
  hoursPerMonth: HOURS_PER_MONTH,
  /** Dispatch's event source mapping batch size. */
  dispatchBatchSize: 100,
  sqsBatchSize: 10,
  sqsChunkBytes: 64 * 1024,
} as const;
