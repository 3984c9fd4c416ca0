import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FaultInjector } from '../../functions/aws/faults.js';
import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListShardsCommand,
} from '../../functions/aws/kinesis.js';
import { parseTenantConfig, streamOf } from '../../functions/core/config.js';
import { decodeEnvelope, type Envelope } from '../../functions/core/envelope.js';
import { DYNAMODB_EMULATOR_ENV, parseDynamoDbEmulator } from '../../infra/local/emulators.js';
import { type Runtime, startRuntime } from '../../infra/local/runtime.js';

/** A local runtime of its own for one test file: its own data folder, port and emulators. */

/** `LEASEQ_DYNAMODB=dynamodb-local` runs the tests against AWS's DynamoDB Local (`npm run test:dynamodb-local`). */
export const DYNAMODB = parseDynamoDbEmulator(process.env[DYNAMODB_EMULATOR_ENV]);

export interface TestRuntime {
  runtime: Runtime;
  faults: FaultInjector;
  dataDir: string;
  /** Calls the HTTP API with the admin key unless `key` says otherwise (null: no header). */
  api(
    path: string,
    init?: { method?: string; body?: unknown; key?: string | null; headers?: Record<string, string> },
  ): Promise<ApiAnswer>;
  records(queue: string): Promise<StreamRecord[]>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface ApiAnswer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected field by field.
  body: any;
}

export interface StreamRecord {
  shardId: string;
  sequenceNumber: string;
  partitionKey: string;
  envelope: Envelope;
}

export const TEST_TENANT = {
  tenant: 'test',
  sqs_credentials: true,
  queues: {
    jobs: { shards: 2 },
    ledger: { ordered: true, shards: 2 },
  },
};

/** Timings that keep tests fast: the sweep every 100 ms, shard pollers every 20 ms. */
export const FAST = { sweepIntervalMs: 100, idlePollMs: 20 } as const;

export async function startTestRuntime(
  rawTenant: unknown = TEST_TENANT,
  adminKey = 'test-admin-key-0123456789',
  timings: {
    sweepIntervalMs?: number;
    idlePollMs?: number;
    wakePollers?: boolean;
    gaugeIntervalMs?: number;
    sweepTickMs?: number;
    requestsIsolated?: boolean;
  } = FAST,
): Promise<TestRuntime> {
  const tenant = parseTenantConfig(rawTenant);
  const dataDir = mkdtempSync(join(tmpdir(), 'leaseq-test-'));
  const faults = new FaultInjector();
  const start = () =>
    startRuntime({
      tenant,
      dataDir,
      port: 0,
      adminKey,
      faults,
      logLevel: 'SILENT',
      dynamodb: DYNAMODB,
      ...timings,
    });
  let runtime = await start();

  const self: TestRuntime = {
    get runtime() {
      return runtime;
    },
    faults,
    dataDir,
    async api(path, init = {}) {
      const headers: Record<string, string> = { ...(init.headers ?? {}) };
      const key = init.key === undefined ? adminKey : init.key;
      if (key !== null) headers.authorization = `Bearer ${key}`;
      let body: string | undefined;
      if (init.body !== undefined) {
        body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(`${runtime.url}${path}`, {
        method: init.method ?? (body ? 'POST' : 'GET'),
        headers,
        body,
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
    },
    async records(queue) {
      return readAllRecords(runtime, streamOf(tenant, queue));
    },
    async restart() {
      await runtime.close();
      runtime = await start();
    },
    async close() {
      await runtime.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return self;
}

/** Every record of every shard, from the trim horizon, in shard order. */
async function readAllRecords(runtime: Runtime, stream: string): Promise<StreamRecord[]> {
  const { kinesis } = runtime.clients;
  const shards = (await kinesis.send(new ListShardsCommand({ StreamName: stream }))).Shards ?? [];
  const out: StreamRecord[] = [];
  for (const shard of shards) {
    let iterator = (
      await kinesis.send(
        new GetShardIteratorCommand({
          StreamName: stream,
          ShardId: shard.ShardId,
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      )
    ).ShardIterator;
    while (iterator) {
      const page = await kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 10_000 }));
      for (const r of page.Records ?? []) {
        out.push({
          shardId: shard.ShardId as string,
          sequenceNumber: r.SequenceNumber as string,
          partitionKey: r.PartitionKey as string,
          envelope: decodeEnvelope(r.Data as Uint8Array),
        });
      }
      if (!page.Records?.length || page.MillisBehindLatest === 0) break;
      iterator = page.NextShardIterator;
    }
  }
  return out;
}
