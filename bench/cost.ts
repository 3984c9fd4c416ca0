import type { MeterSnapshot } from '../functions/aws/meter.js';
import { DEPLOYMENT, PRICES } from './prices.js';
import type { ProbeSnapshot } from './probe.js';
import { formatTable } from './stats.js';
import { type ApiTallySnapshot, PAYLOAD_BYTES } from './workload.js';

/**
 * Dollars per million delivered messages: what one run asked of each AWS service, per message,
 * times the list prices of bench/prices.ts; and SQS for the same workload beside it.
 */

export interface RunUsage {
  run: string;
  /** Delivered and acked messages. */
  messages: number;
  seconds: number;
  shards: number;
  meter: MeterSnapshot;
  probe: ProbeSnapshot;
  api: ApiTallySnapshot;
}

/** What the runtime does with no traffic (the sweep's passes, the local shard pollers), per second. */
export interface Background {
  seconds: number;
  queues: number;
  meter: MeterSnapshot;
}

/** Kinesis reads are not billed per request (provisioned: free; on-demand: by bytes, counted apart). */
const UNBILLED_OPERATIONS = /^Kinesis\.(GetRecords|GetShardIterator|ListShards|DescribeStream)/;

export interface PerMessageUsage {
  /** AWS requests but the event source's Kinesis reads (every DynamoDB, PutRecords and S3 call), background subtracted. */
  awsRequests: number;
  dynamodbRequests: number;
  writeUnits: number;
  indexWriteUnits: number;
  failedConditionalWrites: number;
  readUnits: number;
  kinesisPutPayloadUnits: number;
  kinesisIngestedKb: number;
  kinesisRetrievedKb: number;
  s3Put: number;
  s3Get: number;
  apiRequests: number;
  emptyReceives: number;
  dispatchInvocations: number;
  /** Lower bound on AWS: one invocation per full batch per shard. */
  dispatchInvocationsModel: number;
  lambdaInvocations: number;
  lambdaGbSeconds: number;
}

export interface CostLine {
  item: string;
  quantity: number;
  unit: string;
  usdPerMillion: number;
}

export interface RunCost {
  run: string;
  perMessage: PerMessageUsage;
  lines: CostLine[];
  /** DynamoDB as dynalite reports it (base table only). */
  totalMeasuredBaseTable: number;
  /** Plus what DynamoDB also bills and dynalite does not report: gsi1 writes and failed conditional writes. */
  totalWithIndex: number;
  /** The same, with an on-demand stream (data in and out by the GB) instead of PUT payload units. */
  totalWithIndexKinesisOnDemand: number;
}

const MILLION = 1e6;
const GB_IN_KB = 1024 * 1024;

const claimCheckUsdPerMillion = (PRICES.s3PutRequest.usd + PRICES.s3GetRequest.usd) * MILLION;

/** The assumptions behind the dollar figures, printed with them. */
export const COST_NOTES = [
  'Per-message usage subtracts what the runtime does with no traffic (the sweep passes, the local pollers) ' +
    "over the run's length; that part is priced as the fixed monthly cost.",
  'DynamoDB: base-table units are what dynalite reports; gsi1 (projection ALL) writes are counted per successful ' +
    'state-item write (admit 1, lease 2 = delete + put, ack 1: 4 per delivered message; bench/prices.ts); a write ' +
    'refused by its condition (consumers racing for one message) is billed 1 WRU on AWS and reported by neither. ' +
    'DynamoDB Local reports index units: test/dynamodb-local/index-units.test.ts measures the 4 there.',
  'Lambda invocations = API requests (each is one api invocation) + dispatch invocations, counted by the window ' +
    'counter each invocation reads first and writes last (bench/probe.ts). Locally a produce nudges the pollers, so ' +
    'dispatch runs more often than on AWS, whose event source polls each shard once a second; at high rates it ' +
    'approaches ceil(records/100) per shard (the "AWS model" row).',
  "Lambda duration = each API request's time at the client (a receive's long poll included: Lambda bills the wait) + " +
    'dispatch from window read to window write, at 0.5 GB arm64. Measured on 2 loaded cores against emulators: ' +
    'an upper-side estimate.',
  "Kinesis reads by the event source mapping are free in provisioned mode (the stack's); on-demand bills the bytes.",
  "SQS: the consumer's own compute is not counted (leaseq's api function is part of the queue, so it is); SQS " +
    "figures leave out empty receives, leaseq's include those its workers made.",
  `A claim-checked message (payload > 256 KB) adds an S3 PUT at produce and a GET per delivery: ` +
    `$${claimCheckUsdPerMillion.toFixed(2)} per million (none here: ${PAYLOAD_BYTES}-byte payloads).`,
];

/** The meter's counts less what the runtime did in the background meanwhile (never below zero). */
function lessBackground(meter: MeterSnapshot, background: Background, seconds: number) {
  const scale = seconds / background.seconds;
  const requests: Record<string, number> = {};
  for (const [op, n] of Object.entries(meter.requests)) {
    requests[op] = Math.max(0, n - (background.meter.requests[op] ?? 0) * scale);
  }
  return {
    requests,
    readUnits: Math.max(0, meter.readUnits - background.meter.readUnits * scale),
    writeUnits: Math.max(0, meter.writeUnits - background.meter.writeUnits * scale),
    indexWriteUnits: Math.max(0, meter.indexWriteUnits - background.meter.indexWriteUnits * scale),
  };
}

export function perMessageUsage(usage: RunUsage, background: Background): PerMessageUsage {
  const n = usage.messages;
  const meter = lessBackground(usage.meter, background, usage.seconds);
  const sum = (filter: (op: string) => boolean) =>
    Object.entries(meter.requests)
      .filter(([op]) => filter(op))
      .reduce((a, [, c]) => a + c, 0);
  const { probe, api } = usage;
  const dispatch = probe.dispatchInvocations + probe.dispatchFullWindowInvocations;
  const perShard = Math.ceil(n / usage.shards / DEPLOYMENT.dispatchBatchSize);
  return {
    awsRequests: sum((op) => !UNBILLED_OPERATIONS.test(op)) / n,
    dynamodbRequests: sum((op) => op.startsWith('DynamoDB.')) / n,
    writeUnits: meter.writeUnits / n,
    // Measured where the service reports index units (DynamoDB Local), else counted per write.
    indexWriteUnits: (meter.indexWriteUnits > 0 ? meter.indexWriteUnits : probe.indexWriteUnits) / n,
    failedConditionalWrites: probe.failedConditionalWrites / n,
    readUnits: meter.readUnits / n,
    kinesisPutPayloadUnits: probe.kinesisPutPayloadUnits / n,
    kinesisIngestedKb: probe.kinesisIngestedKb / n,
    kinesisRetrievedKb: probe.kinesisRetrievedKb / n,
    s3Put: sum((op) => /^S3\.(Put|Copy|Post|List|CreateMultipart|UploadPart|CompleteMultipart)/.test(op)) / n,
    s3Get: sum((op) => /^S3\.(Get|Head)/.test(op)) / n,
    apiRequests: api.total / n,
    emptyReceives: api.emptyReceives / n,
    dispatchInvocations: dispatch / n,
    dispatchInvocationsModel: (perShard * usage.shards) / n,
    lambdaInvocations: (api.total + dispatch) / n,
    lambdaGbSeconds: ((api.seconds + probe.dispatchSeconds) * DEPLOYMENT.lambdaMemoryGb) / n,
  };
}

export function runCost(usage: RunUsage, background: Background): RunCost {
  const u = perMessageUsage(usage, background);
  const line = (item: string, quantity: number, unit: string, price: number): CostLine => ({
    item,
    quantity,
    unit,
    usdPerMillion: quantity * price * MILLION,
  });
  const P = PRICES;
  const base = [
    line('DynamoDB writes, base table (measured)', u.writeUnits, 'WRU', P.dynamodbWriteRequestUnit.usd),
    line('DynamoDB reads (measured)', u.readUnits, 'RRU', P.dynamodbReadRequestUnit.usd),
    line('Kinesis PUT payload units', u.kinesisPutPayloadUnits, 'units', P.kinesisPutPayloadUnit.usd),
    line('S3 PUT requests', u.s3Put, 'requests', P.s3PutRequest.usd),
    line('S3 GET requests', u.s3Get, 'requests', P.s3GetRequest.usd),
    line('API Gateway HTTP requests', u.apiRequests, 'requests', P.apiGatewayHttpRequest.usd),
    line('Lambda invocations (api + dispatch)', u.lambdaInvocations, 'invocations', P.lambdaRequest.usd),
    line('Lambda duration (api + dispatch)', u.lambdaGbSeconds, 'GB-s', P.lambdaArmGbSecond.usd),
  ];
  const unreported = [
    line('DynamoDB index writes (estimated)', u.indexWriteUnits, 'WRU', P.dynamodbWriteRequestUnit.usd),
    line(
      'DynamoDB failed conditional writes (counted)',
      u.failedConditionalWrites,
      'WRU',
      P.dynamodbWriteRequestUnit.usd,
    ),
  ];
  const total = (lines: CostLine[]) => lines.reduce((a, l) => a + l.usdPerMillion, 0);
  const putUnits = base[2] as CostLine;
  const onDemandKinesis =
    ((u.kinesisIngestedKb / GB_IN_KB) * P.kinesisOnDemandIngestGb.usd +
      (u.kinesisRetrievedKb / GB_IN_KB) * P.kinesisOnDemandRetrievalGb.usd) *
    MILLION;
  const totalMeasuredBaseTable = total(base);
  const totalWithIndex = totalMeasuredBaseTable + total(unreported);
  return {
    run: usage.run,
    perMessage: u,
    lines: [base[0] as CostLine, ...unreported, ...base.slice(1)],
    totalMeasuredBaseTable,
    totalWithIndex,
    totalWithIndexKinesisOnDemand: totalWithIndex - putUnits.usdPerMillion + onDemandKinesis,
  };
}

export interface SqsCost {
  queue: 'standard' | 'FIFO';
  mode: 'unbatched' | 'batched';
  requestsPerMessage: number;
  usdPerMillion: number;
}

/**
 * SQS for the same workload (produce, receive, ack = delete), with the consumer's own compute
 * not counted (leaseq's api function is counted: it is part of the queue there). Unbatched:
 * SendMessage + ReceiveMessage + DeleteMessage = 3 requests a message. Batched: 10 a request
 * (SendMessageBatch, ReceiveMessage of 10, DeleteMessageBatch) = 0.3. Each 64 KB of a request's
 * payload is a request of its own. Empty receives are left out (a long poll of 20 s makes few).
 */
export function sqsCosts(payloadBytes: number): SqsCost[] {
  const chunks = (bytes: number) => Math.max(1, Math.ceil(bytes / DEPLOYMENT.sqsChunkBytes));
  const b = DEPLOYMENT.sqsBatchSize;
  const unbatched = chunks(payloadBytes) * 2 + 1;
  const batched = (chunks(payloadBytes * b) * 2 + 1) / b;
  const out: SqsCost[] = [];
  for (const [queue, price] of [
    ['standard', PRICES.sqsStandardRequest.usd],
    ['FIFO', PRICES.sqsFifoRequest.usd],
  ] as const) {
    for (const [mode, requests] of [
      ['unbatched', unbatched],
      ['batched', batched],
    ] as const) {
      out.push({ queue, mode, requestsPerMessage: requests, usdPerMillion: requests * price * MILLION });
    }
  }
  return out;
}

export interface FixedMonthly {
  item: string;
  /** Per queue, per tenant (its sweep), or per pull worker that waits in long polls with nothing to receive. */
  scope: 'queue' | 'tenant' | 'idle worker';
  usdPerMonth: number;
  note: string;
}

/** Long polls of an idle worker, at the API's default and longest wait. */
const IDLE_WAIT_SECONDS = 20;

/**
 * What leaseq costs a month with no messages at all: a queue's provisioned stream, the tenant's
 * sweep (its queries measured idle, per queue), and a pull worker that keeps long-polling.
 */
export function fixedMonthly(shards: number, retentionHours: number, background: Background): FixedMonthly[] {
  const hours = DEPLOYMENT.hoursPerMonth;
  const P = PRICES;
  const perQueuePerSecond = (n: number) => n / background.seconds / background.queues;
  const duty = DEPLOYMENT.sweepBilledSecondsPerMinute / 60;
  const monthSeconds = hours * 3600;
  const gbSecond = DEPLOYMENT.lambdaMemoryGb * P.lambdaArmGbSecond.usd;
  const idlePolls = monthSeconds / IDLE_WAIT_SECONDS;
  return [
    {
      item: 'Kinesis shard-hours',
      scope: 'queue',
      usdPerMonth: shards * hours * P.kinesisShardHour.usd,
      note: `${shards} shards × ${hours} h`,
    },
    {
      item: 'Kinesis extended retention',
      scope: 'queue',
      usdPerMonth: retentionHours > 24 ? shards * hours * P.kinesisExtendedRetentionShardHour.usd : 0,
      note: `retention ${retentionHours} h > 24 h`,
    },
    {
      item: 'sweep DynamoDB reads (measured idle)',
      scope: 'queue',
      usdPerMonth:
        perQueuePerSecond(background.meter.readUnits) * monthSeconds * duty * P.dynamodbReadRequestUnit.usd +
        perQueuePerSecond(background.meter.writeUnits) * monthSeconds * duty * P.dynamodbWriteRequestUnit.usd,
      note: `${formatRate(perQueuePerSecond(background.meter.readUnits))} RRU/s`,
    },
    {
      item: 'sweep Lambda (1 a minute, passes for 55 s)',
      scope: 'tenant',
      usdPerMonth: monthSeconds * duty * gbSecond + hours * 60 * P.lambdaRequest.usd,
      note: `${DEPLOYMENT.lambdaMemoryGb} GB arm64`,
    },
    {
      item: `receive long polls of ${IDLE_WAIT_SECONDS} s, all empty`,
      scope: 'idle worker',
      usdPerMonth: idlePolls * (P.apiGatewayHttpRequest.usd + P.lambdaRequest.usd) + monthSeconds * gbSecond,
      note: `Lambda bills the wait; SQS: $${(idlePolls * P.sqsStandardRequest.usd).toFixed(2)}`,
    },
  ];
}

function formatRate(n: number): string {
  return n < 10 ? n.toFixed(2) : n.toFixed(0);
}

export function printCost(costs: RunCost[], sqs: SqsCost[], fixed: FixedMonthly[], headline: string): void {
  console.log(
    '\nAWS usage per delivered message (background subtracted; on AWS, list prices of bench/prices.ts):\n',
  );
  const q = (f: (u: PerMessageUsage) => number) => costs.map((c) => f(c.perMessage));
  console.log(
    formatTable(
      ['per message', ...costs.map((c) => c.run)],
      [
        ['AWS requests (w/o Kinesis reads)', ...q((u) => u.awsRequests)],
        ['  of which DynamoDB', ...q((u) => u.dynamodbRequests)],
        ['DynamoDB WRU, base table (measured)', ...q((u) => u.writeUnits)],
        ['DynamoDB WRU, gsi1 (estimated)', ...q((u) => u.indexWriteUnits)],
        ['DynamoDB failed conditional writes', ...q((u) => u.failedConditionalWrites)],
        ['DynamoDB RRU (measured)', ...q((u) => u.readUnits)],
        ['Kinesis PUT payload units', ...q((u) => u.kinesisPutPayloadUnits)],
        ['Kinesis KB in / out (1 KB rounding)', ...costs.map(kbInOut)],
        ['S3 requests (PUT + GET)', ...q((u) => u.s3Put + u.s3Get)],
        ['API Gateway requests', ...q((u) => u.apiRequests)],
        ['  of which empty receives', ...q((u) => u.emptyReceives)],
        ['Lambda invocations', ...q((u) => u.lambdaInvocations)],
        ['  of which dispatch (measured)', ...q((u) => u.dispatchInvocations)],
        ['  dispatch, AWS model ceil(n/100)/shard', ...q((u) => u.dispatchInvocationsModel)],
        ['Lambda GB-s (0.5 GB × duration)', ...q((u) => u.lambdaGbSeconds)],
      ],
    ),
  );

  console.log('\n$ per million delivered messages:\n');
  const items = costs[0]?.lines.map((l) => l.item) ?? [];
  console.log(
    formatTable(
      ['$ / million messages', ...costs.map((c) => c.run)],
      [
        ...items.map((item) => [
          item,
          ...costs.map((c) => c.lines.find((l) => l.item === item)?.usdPerMillion ?? 0),
        ]),
        ['TOTAL measured base-table', ...costs.map((c) => c.totalMeasuredBaseTable)],
        ['TOTAL estimated with index (+ failed writes)', ...costs.map((c) => c.totalWithIndex)],
        ['  … with Kinesis on-demand instead', ...costs.map((c) => c.totalWithIndexKinesisOnDemand)],
      ],
    ),
  );

  const lead = costs.find((c) => c.run === headline) ?? costs[0];
  if (!lead) return;
  console.log(
    `\nleaseq (${lead.run}) beside SQS for the same workload ($ per million messages, variable cost only):\n`,
  );
  console.log(
    formatTable(
      ['queue', 'requests/msg', '$ / M msgs', 'leaseq ÷ this'],
      [
        ['leaseq, measured base-table', lead.perMessage.awsRequests, lead.totalMeasuredBaseTable, '-'],
        [
          'leaseq, estimated with index (+ failed writes)',
          lead.perMessage.awsRequests,
          lead.totalWithIndex,
          '-',
        ],
        ...sqs.map((s) => [
          `SQS ${s.queue}, ${s.mode}`,
          s.requestsPerMessage,
          s.usdPerMillion,
          `${(lead.totalWithIndex / s.usdPerMillion).toFixed(1)}×`,
        ]),
      ],
    ),
  );

  const oneQueueTenant = fixed
    .filter((f) => f.scope !== 'idle worker')
    .reduce((a, f) => a + f.usdPerMonth, 0);
  console.log('\nWhat leaseq costs a month with no messages at all (SQS: nothing but the requests made):\n');
  console.log(
    formatTable(
      ['item', 'per', '$ / month', 'basis'],
      [
        ...fixed.map((f) => [f.item, f.scope, f.usdPerMonth, f.note]),
        ['TOTAL, a tenant with one queue', '', oneQueueTenant, 'no worker waiting'],
      ],
    ),
  );
  console.log(
    `\n$ per million messages with that fixed cost spread over a month's volume (${lead.run}, with index, ` +
      'a tenant with one queue):\n',
  );
  const volumes = [1e6, 1e7, 1e8, 1e9];
  console.log(
    formatTable(
      ['messages a month', 'leaseq', 'SQS std batched', 'SQS FIFO batched'],
      volumes.map((v) => [
        v.toLocaleString('en-US'),
        lead.totalWithIndex + oneQueueTenant / (v / MILLION),
        sqs.find((s) => s.queue === 'standard' && s.mode === 'batched')?.usdPerMillion ?? 0,
        sqs.find((s) => s.queue === 'FIFO' && s.mode === 'batched')?.usdPerMillion ?? 0,
      ]),
    ),
  );
}

function kbInOut(c: RunCost): string {
  return `${c.perMessage.kinesisIngestedKb.toFixed(2)} / ${c.perMessage.kinesisRetrievedKb.toFixed(2)}`;
}
