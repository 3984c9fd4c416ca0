import type { MeterSnapshot } from '../functions/aws/meter.js';
import { type DeployedTenant, FIXED_TENANTS, type FixedTenant } from './deployed-stack.js';
import type { ApiTallySnapshot } from './http.js';
import type { IdleTick } from './idle-tick.js';
import { DEPLOYMENT, PRICES } from './prices.js';
import type { ProbeSnapshot } from './probe.js';
import {
  atLeast,
  type CapacityPerMessage,
  capacityPerMessage,
  formatTable,
  INDEX_NOT_REPORTED,
} from './stats.js';
import { WORKLOAD } from './workload.js';

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
  /** The emulator reports index write units (DynamoDB Local); dynalite does not. */
  indexReported: boolean;
}

/** What the runtime does with no traffic (the sweep's passes, the local shard pollers), per second. */
export interface Background {
  seconds: number;
  queues: number;
  meter: MeterSnapshot;
}

/** Kinesis reads are not billed per request (provisioned: free; on-demand: by bytes, counted apart). */
const UNBILLED_OPERATIONS = /^Kinesis\.(GetRecords|GetShardIterator|ListShards|DescribeStream)/;

export interface PerMessageUsage extends CapacityPerMessage {
  /** AWS requests but the event source's Kinesis reads (every DynamoDB, PutRecords and S3 call), background subtracted. */
  awsRequests: number;
  dynamodbRequests: number;
  kinesisPutPayloadUnits: number;
  kinesisIngestedKb: number;
  kinesisRetrievedKb: number;
  s3Put: number;
  s3Get: number;
  apiRequests: number;
  emptyReceives: number;
  /** Receipts per ack request (the workload asks for WORKLOAD.ackBatch). */
  receiptsPerAck: number;
  /** The AWS model, a lower bound: one invocation per full batch per shard. */
  dispatchInvocations: number;
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
  /**
   * Every line: DynamoDB base, index and failed conditional writes and reads, Kinesis, S3, API
   * Gateway, Lambda. A lower bound where index writes are not reported (indexReported false).
   */
  total: number;
  indexReported: boolean;
  /** The same, with an on-demand stream (data in and out by the GB) instead of PUT payload units. */
  totalKinesisOnDemand: number;
}

const MILLION = 1e6;
const INDEX_LINE = 'DynamoDB writes, indexes';
const GB_IN_KB = 1024 * 1024;

const claimCheckUsdPerMillion = (PRICES.s3PutRequest.usd + PRICES.s3GetRequest.usd) * MILLION;

/** The assumptions behind the dollar figures, printed with them. */
export const COST_NOTES = [
  'Per-message usage subtracts what the runtime does with no traffic (the sweep passes, the local pollers) ' +
    "over the run's length; that part is priced as the fixed monthly cost.",
  'DynamoDB: base-table and index write units and read units as the emulator reports them (ReturnConsumedCapacity ' +
    'INDEXES): DynamoDB Local reports index writes, dynalite does not (run with --dynamodb-local to measure them; ' +
    'without, the WRU and $ totals leave them out and are lower bounds). A write refused by its condition (consumers ' +
    'racing for one message) is billed 1 WRU on AWS and reported by neither emulator: bench/probe.ts counts them.',
  'Lambda invocations = API requests (each is one api invocation) + dispatch invocations by the AWS model (its ' +
    'event source polls each shard once a second; at high rates a batch of 100 records per invocation), a lower ' +
    'bound whose duration is not measured (not counted in GB-s).',
  "Lambda duration = each API request's time at the client (a receive's long poll included: Lambda bills the wait), " +
    'at 0.5 GB arm64. Measured on 2 loaded cores against emulators: an upper-side estimate for the api, without ' +
    "dispatch's.",
  "Kinesis reads by the event source mapping are free in provisioned mode (the stack's); on-demand bills the bytes.",
  "SQS: the consumer's own compute is not counted (leaseq's api function is part of the queue, so it is); SQS " +
    "figures leave out empty receives, leaseq's include those its workers made.",
  `A claim-checked message (payload > 256 KB) adds an S3 PUT at produce and a GET per delivery: ` +
    `$${claimCheckUsdPerMillion.toFixed(2)} per million (none here: ${WORKLOAD.payloadBytes}-byte payloads); ` +
    'S3 requests the runtime makes otherwise are counted in the S3 lines.',
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
  const dispatch = Math.ceil(n / usage.shards / DEPLOYMENT.dispatchBatchSize) * usage.shards;
  return {
    ...capacityPerMessage(meter, probe.failedConditionalWrites, usage.indexReported, n),
    awsRequests: sum((op) => !UNBILLED_OPERATIONS.test(op)) / n,
    dynamodbRequests: sum((op) => op.startsWith('DynamoDB.')) / n,
    kinesisPutPayloadUnits: probe.kinesisPutPayloadUnits / n,
    kinesisIngestedKb: probe.kinesisIngestedKb / n,
    kinesisRetrievedKb: probe.kinesisRetrievedKb / n,
    s3Put: sum((op) => /^S3\.(Put|Copy|Post|List|CreateMultipart|UploadPart|CompleteMultipart)/.test(op)) / n,
    s3Get: sum((op) => /^S3\.(Get|Head)/.test(op)) / n,
    apiRequests: api.total / n,
    emptyReceives: api.emptyReceives / n,
    receiptsPerAck: n / (api.requests.ack ?? n),
    dispatchInvocations: dispatch / n,
    lambdaInvocations: (api.total + dispatch) / n,
    lambdaGbSeconds: (api.seconds * DEPLOYMENT.lambdaMemoryGb) / n,
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
  const wru = P.dynamodbWriteRequestUnit.usd;
  const putUnits = line(
    'Kinesis PUT payload units',
    u.kinesisPutPayloadUnits,
    'units',
    P.kinesisPutPayloadUnit.usd,
  );
  const lines = [
    line('DynamoDB writes, base table', u.writeUnits, 'WRU', wru),
    line(INDEX_LINE, u.indexWriteUnits ?? 0, 'WRU', wru),
    line('DynamoDB failed conditional writes', u.failedConditionalWrites, 'WRU', wru),
    line('DynamoDB reads', u.readUnits, 'RRU', P.dynamodbReadRequestUnit.usd),
    putUnits,
    line('S3 PUT requests', u.s3Put, 'requests', P.s3PutRequest.usd),
    line('S3 GET requests', u.s3Get, 'requests', P.s3GetRequest.usd),
    line('API Gateway HTTP requests', u.apiRequests, 'requests', P.apiGatewayHttpRequest.usd),
    line('Lambda invocations (api + dispatch)', u.lambdaInvocations, 'invocations', P.lambdaRequest.usd),
    line('Lambda duration (api + dispatch)', u.lambdaGbSeconds, 'GB-s', P.lambdaArmGbSecond.usd),
  ];
  const onDemandKinesis =
    ((u.kinesisIngestedKb / GB_IN_KB) * P.kinesisOnDemandIngestGb.usd +
      (u.kinesisRetrievedKb / GB_IN_KB) * P.kinesisOnDemandRetrievalGb.usd) *
    MILLION;
  const total = lines.reduce((a, l) => a + l.usdPerMillion, 0);
  return {
    run: usage.run,
    perMessage: u,
    lines,
    total,
    indexReported: usage.indexReported,
    totalKinesisOnDemand: total - putUnits.usdPerMillion + onDemandKinesis,
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
  /** How many of it each goal tenant has: resources, metrics, queues the sweep reads, idle workers. */
  count: Record<FixedTenant, number>;
  /** What it costs each goal tenant a month (FIXED_TENANTS: its queues, its idle workers). */
  usdPerMonth: Record<FixedTenant, number>;
  note: string;
}

/** Long polls of an idle worker, at the API's default and longest wait. */
const IDLE_WAIT_SECONDS = 20;
/**
 * An idle Worker on the wake channel (docs/wake-channel.md): a look every IDLE_WAIT_SECONDS that
 * answers nothing (a receive without a wait: the registration's write and two looks of one range
 * read each, in a short invocation), a ping every 5 minutes, a new connection every 2 hours.
 */
const CHANNEL = {
  lookMs: 15,
  lookWriteUnits: 1,
  lookReadUnits: 2,
  pingsPerHour: 12,
  connectionsPerHour: 0.5,
};

const TENANTS = Object.keys(FIXED_TENANTS) as FixedTenant[];

function perTenant(f: (t: FixedTenant) => number): Record<FixedTenant, number> {
  return Object.fromEntries(TENANTS.map((t) => [t, f(t)])) as Record<FixedTenant, number>;
}

/**
 * What leaseq costs a month with no messages at all, for each goal tenant: its stack as deployed
 * (bench/deployed-stack.ts: the resources `cdk synth` makes that bill idle), the sweep at each
 * minute's tick (a pass that rests and the gauges,
 * measured idle), and its pull workers that keep waiting on the wake channel.
 */
export function fixedMonthly(deployed: Record<FixedTenant, DeployedTenant>, tick: IdleTick): FixedMonthly[] {
  const hours = DEPLOYMENT.hoursPerMonth;
  const P = PRICES;
  const ticks = hours * 60;
  const perQueue = (n: number) => n / tick.queues;
  const monthSeconds = hours * 3600;
  const gbSecond = DEPLOYMENT.lambdaMemoryGb * P.lambdaArmGbSecond.usd;
  const idlePolls = monthSeconds / IDLE_WAIT_SECONDS;
  // The stack's lines, by item, in the order the one-queue tenant has them (then any only the other has).
  const items = [...new Set(TENANTS.flatMap((t) => deployed[t].items.map((i) => i.item)))];
  const stack = items.map((item): FixedMonthly => {
    const of = (t: FixedTenant) => deployed[t].items.find((i) => i.item === item);
    const notes = [...new Set(TENANTS.map((t) => of(t)?.note).filter((n) => n !== undefined))];
    return {
      item,
      count: perTenant((t) => of(t)?.count ?? 0),
      usdPerMonth: perTenant((t) => of(t)?.usdPerMonth ?? 0),
      note: notes.join(' | '),
    };
  });
  const unclassified = [...new Set(TENANTS.flatMap((t) => deployed[t].unclassified))];
  const sweepUnitsUsd =
    perQueue(tick.meter.readUnits) * ticks * P.dynamodbReadRequestUnit.usd +
    perQueue(tick.meter.writeUnits) * ticks * P.dynamodbWriteRequestUnit.usd;
  const worker =
    (monthSeconds / 60) * P.apiGatewayWebSocketConnectionMinute.usd +
    idlePolls *
      (P.apiGatewayHttpRequest.usd +
        P.lambdaRequest.usd +
        (CHANNEL.lookMs / 1000) * gbSecond +
        CHANNEL.lookWriteUnits * P.dynamodbWriteRequestUnit.usd +
        CHANNEL.lookReadUnits * P.dynamodbReadRequestUnit.usd) +
    // A ping and a hello are a message in and its answer out, each an invocation of the api function.
    hours *
      (CHANNEL.pingsPerHour + CHANNEL.connectionsPerHour) *
      (2 * P.apiGatewayWebSocketMessage.usd + P.lambdaRequest.usd);
  return [
    ...stack,
    ...(unclassified.length
      ? [
          {
            item: `not priced: ${unclassified.join(', ')}`,
            count: perTenant(() => 0),
            usdPerMonth: perTenant(() => 0),
            note: 'resource types bench/deployed-stack.ts neither prices nor knows free: look them up',
          },
        ]
      : []),
    {
      item: "sweep DynamoDB at a minute's tick (measured idle)",
      count: perTenant((t) => FIXED_TENANTS[t].queues),
      usdPerMonth: perTenant((t) => FIXED_TENANTS[t].queues * sweepUnitsUsd),
      note: `${formatRate(perQueue(tick.meter.readUnits))} RRU a queue a tick: a pass that rests, the gauges`,
    },
    {
      item: "sweep Lambda, a minute's tick that rests",
      count: perTenant(() => 1),
      usdPerMonth: perTenant(() => ticks * ((tick.ms / 1000) * gbSecond + P.lambdaRequest.usd)),
      note:
        `${tick.ms.toFixed(0)} ms here with ${tick.queues} queues${tick.rested ? '' : ' (it did not rest!)'}; ` +
        `${DEPLOYMENT.lambdaMemoryGb} GB arm64`,
    },
    {
      item: `idle Workers on the wake channel, a look every ${IDLE_WAIT_SECONDS} s`,
      count: perTenant((t) => FIXED_TENANTS[t].workers),
      usdPerMonth: perTenant((t) => FIXED_TENANTS[t].workers * worker),
      note:
        `$${worker.toFixed(2)} each: connection minutes, pings, looks; long polls of ${IDLE_WAIT_SECONDS} s instead: ` +
        `$${(idlePolls * (P.apiGatewayHttpRequest.usd + P.lambdaRequest.usd) + monthSeconds * gbSecond).toFixed(2)} ` +
        `(Lambda bills the wait); SQS: $${(idlePolls * P.sqsStandardRequest.usd).toFixed(2)}`,
    },
  ];
}

/** A goal tenant's fixed monthly cost: its synthesized stack, its sweep, its idle workers. */
export function fixedTotal(fixed: readonly FixedMonthly[], tenant: FixedTenant): number {
  return fixed.reduce((a, f) => a + f.usdPerMonth[tenant], 0);
}

function formatRate(n: number): string {
  return n < 10 ? n.toFixed(2) : n.toFixed(0);
}

export function printCost(costs: RunCost[], sqs: SqsCost[], fixed: FixedMonthly[], headline: string): void {
  console.log(
    '\nAWS usage per delivered message (background subtracted; on AWS, list prices of bench/prices.ts):\n',
  );
  const q = (f: (u: PerMessageUsage) => number) => costs.map((c) => f(c.perMessage));
  const allIn = (f: (c: RunCost) => number) => costs.map((c) => atLeast(f(c), c.indexReported));
  const index = costs.map((c) => c.perMessage.indexWriteUnits ?? 'not reported');
  console.log(
    formatTable(
      ['per message', ...costs.map((c) => c.run)],
      [
        ['AWS requests (w/o Kinesis reads)', ...q((u) => u.awsRequests)],
        ['  of which DynamoDB', ...q((u) => u.dynamodbRequests)],
        ['DynamoDB WRU, base table', ...q((u) => u.writeUnits)],
        ['DynamoDB WRU, indexes', ...index],
        ['DynamoDB failed conditional writes (1 WRU each)', ...q((u) => u.failedConditionalWrites)],
        ['DynamoDB WRU, all-in (base + index + failed)', ...allIn((c) => c.perMessage.writeUnitsAllIn)],
        ['DynamoDB RRU', ...q((u) => u.readUnits)],
        ['Kinesis PUT payload units', ...q((u) => u.kinesisPutPayloadUnits)],
        ['Kinesis KB in / out (1 KB rounding)', ...costs.map(kbInOut)],
        ['S3 requests (PUT + GET)', ...q((u) => u.s3Put + u.s3Get)],
        ['API Gateway requests', ...q((u) => u.apiRequests)],
        ['  of which empty receives', ...q((u) => u.emptyReceives)],
        ['  receipts per ack request', ...q((u) => u.receiptsPerAck)],
        ['Lambda invocations', ...q((u) => u.lambdaInvocations)],
        ['  of which dispatch (AWS model ceil(n/100)/shard)', ...q((u) => u.dispatchInvocations)],
        ['Lambda GB-s (0.5 GB × duration)', ...q((u) => u.lambdaGbSeconds)],
      ],
    ),
  );
  if (costs.some((c) => !c.indexReported)) {
    console.log(`\nIndex WRU: ${INDEX_NOT_REPORTED}; "≥" marks totals that leave them out.`);
  }

  console.log('\n$ per million delivered messages:\n');
  const items = costs[0]?.lines.map((l) => l.item) ?? [];
  console.log(
    formatTable(
      ['$ / million messages', ...costs.map((c) => c.run)],
      [
        ...items.map((item) => [
          item,
          ...costs.map((c) => {
            if (item === INDEX_LINE && !c.indexReported) return 'not reported';
            return c.lines.find((l) => l.item === item)?.usdPerMillion ?? 0;
          }),
        ]),
        ['TOTAL all-in', ...allIn((c) => c.total)],
        ['  … with Kinesis on-demand instead', ...allIn((c) => c.totalKinesisOnDemand)],
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
        ['leaseq, all-in', lead.perMessage.awsRequests, atLeast(lead.total, lead.indexReported), '-'],
        ...sqs.map((s) => [
          `SQS ${s.queue}, ${s.mode}`,
          s.requestsPerMessage,
          s.usdPerMillion,
          `${lead.indexReported ? '' : '≥ '}${(lead.total / s.usdPerMillion).toFixed(1)}×`,
        ]),
      ],
    ),
  );

  printFixed(fixed);
  const oneQueueTenant = fixedTotal(fixed, 'oneQueue');
  console.log(
    `\n$ per million messages with that fixed cost spread over a month's volume (${lead.run}, all-in, ` +
      'a tenant with one queue):\n',
  );
  const volumes = [1e6, 1e7, 1e8, 1e9];
  console.log(
    formatTable(
      ['messages a month', 'leaseq', 'SQS std batched', 'SQS FIFO batched'],
      volumes.map((v) => [
        v.toLocaleString('en-US'),
        atLeast(lead.total + oneQueueTenant / (v / MILLION), lead.indexReported),
        sqs.find((s) => s.queue === 'standard' && s.mode === 'batched')?.usdPerMillion ?? 0,
        sqs.find((s) => s.queue === 'FIFO' && s.mode === 'batched')?.usdPerMillion ?? 0,
      ]),
    ),
  );
}

/** The fixed monthly cost's table: each line for both goal tenants, and their totals. */
export function printFixed(fixed: readonly FixedMonthly[]): void {
  const { oneQueue, tenQueues } = FIXED_TENANTS;
  const tenants = `${oneQueue.queues} queue, ${oneQueue.workers} workers / ${tenQueues.queues} queues, ${tenQueues.workers} workers`;
  console.log(
    '\nWhat leaseq costs a month with no messages at all: the tenant stack as `cdk synth` makes it, priced idle ' +
      '(bench/deployed-stack.ts), and what runs idle (SQS: nothing but the requests made):\n',
  );
  console.log(
    formatTable(
      ['item', `count (${tenants})`, '$ / month, one queue', '$ / month, ten queues', 'basis'],
      [
        ...fixed.map((f) => [
          f.item,
          `${f.count.oneQueue} / ${f.count.tenQueues}`,
          f.usdPerMonth.oneQueue,
          f.usdPerMonth.tenQueues,
          f.note,
        ]),
        [
          'TOTAL',
          '',
          fixedTotal(fixed, 'oneQueue'),
          fixedTotal(fixed, 'tenQueues'),
          'the queues share one stream',
        ],
      ],
    ),
  );
}

function kbInOut(c: RunCost): string {
  return `${c.perMessage.kinesisIngestedKb.toFixed(2)} / ${c.perMessage.kinesisRetrievedKb.toFixed(2)}`;
}
