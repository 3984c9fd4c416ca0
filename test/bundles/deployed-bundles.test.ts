import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  KinesisStreamBatchResponse,
  KinesisStreamEvent,
} from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLES, initEnvironment, type LeaseqBundleSpec, stageBundle } from '../../bench/bundles.js';
import type { SqsCredentials } from '../../functions/access/sqs-credentials.js';
import { hashApiKey } from '../../functions/core/auth.js';
import { ownStreamName, tableName } from '../../functions/core/config.js';
import { ENV } from '../../functions/core/runtime-config.js';
import { alarmsOf } from '../../functions/observability/alarm-rules.js';
import { buildHostFiles, type HostFiles, LambdaProcess } from '../helpers/lambda-process.js';
import { type MotoServer, motoServerCommand, startMotoServer } from '../helpers/moto-server.js';
import { queueApi } from '../helpers/queue-api.js';
import type { ApiAnswer } from '../helpers/runtime.js';
import { sdkSignedRequest } from '../helpers/sqs-signing.js';
import { makeTestCertificate } from '../helpers/test-ca.js';
import type { RoleCredentials } from './lambda-role.js';

/**
 * What deploys is what is tested: the Lambda bundles built as `cdk synth` builds them (the
 * stack's esbuild options, the tenant file bundled, the lazily loaded files beside them; see
 * bench/bundles.ts), each run in a Node process of its own as a Lambda instance, invoked with the
 * events Lambda gives them (API Gateway v2, Kinesis batches read from the stream, EventBridge's
 * schedule), and calling DynamoDB, Kinesis, S3 and KMS at AWS's regional HTTPS endpoints, which
 * resolve to moto (test/bundles/aws-at-moto.ts) and verify its certificate against a CA of the
 * test's own.
 */

/**
 * The local runtime's region: its bucket is created without a location constraint
 * (infra/local/resources.ts), which S3, and moto with it, takes in us-east-1 only.
 */
const REGION = 'us-east-1';
/** The key of the sample events (events/apigw/), declared in the tenant file as the stack takes keys. */
const KEY = 'sample-admin-key-0000000000';
/** The tenant file; with no `alarms`, the stack bundles it as it is (JSON.stringify). */
const TENANT = {
  tenant: 'bundles',
  queues: {
    // Dispatch admits (no fast admission at produce), so the test sees it do so.
    jobs: {
      shards: 1,
      fast_admission: 'off',
      max_attempts: 2,
      backoff_seconds: [0],
      claim_check_bytes: 1024,
    },
    events: {
      shards: 1,
      max_attempts: 2,
      backoff_seconds: [0],
      claim_check_bytes: 1024,
      consumers: [{ name: 'sample', entry: 'test/fixtures/lambda-consumer.ts' }],
    },
  },
  api_keys: [
    { name: 'sample-admin', sha256: hashApiKey(KEY), scopes: ['produce:*', 'consume:*', 'admin:*'] },
  ],
};
const BUCKET = 'leaseq-bundles-claims';
const STREAM = { jobs: ownStreamName(TENANT.tenant, 'jobs'), events: ownStreamName(TENANT.tenant, 'events') };
/** The functions' timeouts in the stack (infra/leaseq-tenant.ts); the consumer's is the tenant file's default. */
const TIMEOUT_MS = { api: 29_000, dispatch: 60_000, consumer: 60_000 };

const SAMPLES = fileURLToPath(new URL('../../events/apigw/', import.meta.url));
const sample = (name: string): APIGatewayProxyEventV2 =>
  JSON.parse(readFileSync(join(SAMPLES, name), 'utf8'));
const PROVISION = fileURLToPath(new URL('./provision.ts', import.meta.url));
const STREAM_READER = fileURLToPath(new URL('./stream-reader.ts', import.meta.url));
const LAMBDA_ROLE = fileURLToPath(new URL('./lambda-role.ts', import.meta.url));

let dir: string;
let moto: MotoServer | undefined;
let files: HostFiles;
/** Reads the streams as the event source mappings do, beside the functions, with the same preload. */
let harness: LambdaProcess;
/** The functions' role credentials, and the environment every process shares. */
let role: RoleCredentials;
let sharedEnv: Record<string, string>;
const functions = new Map<string, { process: LambdaProcess; bundle: string }>();
/** The alarm topic, and the platform team's queue subscribed to it. */
let alarmTopic: { topicArn: string; queueUrl: string };

beforeAll(async () => {
  motoServerCommand(); // fails first, naming what to install
  dir = mkdtempSync(join(tmpdir(), 'leaseq-bundles-'));
  // A wildcard stands for one label only: each depth of name the bundles call needs its own
  // (`dynamodb.us-east-1.amazonaws.com`, `<bucket>.s3.us-east-1.amazonaws.com`, and the
  // region-less forms the SDK uses for some services and buckets).
  const certificate = makeTestCertificate(dir, [
    `*.${REGION}.amazonaws.com`,
    `*.s3.${REGION}.amazonaws.com`,
    '*.amazonaws.com',
    '*.s3.amazonaws.com',
  ]);
  const started = startMotoServer(certificate);
  // Awaited below, after the builds: a start that fails meanwhile is reported there, not as unhandled.
  started.catch(() => undefined);
  files = await buildHostFiles(join(dir, 'host'), [PROVISION, LAMBDA_ROLE, STREAM_READER]);
  const staged = new Map<string, string>();
  // One at a time: other suites share this machine's two cores.
  for (const spec of BUNDLES)
    staged.set(spec.name, await stageBundle(spec, join(dir, spec.name), JSON.stringify(TENANT)));
  moto = await started;

  const aws = {
    AWS_REGION: REGION,
    AWS_DEFAULT_REGION: REGION,
    // Made up, for provisioning only: moto takes any request until lambda-role.ts turns its auth on.
    AWS_ACCESS_KEY_ID: 'AKIAPROVISIONING',
    AWS_SECRET_ACCESS_KEY: 'provisioning-secret',
    NODE_EXTRA_CA_CERTS: certificate.ca,
    LEASEQ_TEST_AWS_PORT: String(moto.port),
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  // Provisioning goes first, while moto takes any request; the role's credentials then sign
  // everything else, the stream reader's too (an event source mapping reads with the function's role).
  const admin = new LambdaProcess('provision', files, aws);
  let secretsKeyArn: string;
  try {
    ({ secretsKeyArn } = await admin.call<{ secretsKeyArn: string }>(
      files.modules[PROVISION] as string,
      'provision',
      TENANT,
      { table: tableName(TENANT.tenant), bucket: BUCKET, region: REGION },
    ));
    alarmTopic = await admin.call<{ topicArn: string; queueUrl: string }>(
      files.modules[PROVISION] as string,
      'provisionAlarmTopic',
      REGION,
      alarmsOf('platform'),
    );
    role = await admin.call<RoleCredentials>(
      files.modules[LAMBDA_ROLE] as string,
      'assumeFunctionRole',
      REGION,
    );
  } finally {
    await admin.close();
  }
  sharedEnv = aws;
  harness = new LambdaProcess('stream-reader', files, { ...aws, ...role });
  for (const spec of BUNDLES) {
    const env = functionEnvironment(spec, secretsKeyArn, alarmTopic.topicArn);
    functions.set(spec.name, {
      process: new LambdaProcess(spec.name, files, { ...aws, ...env, ...role }),
      bundle: staged.get(spec.name) as string,
    });
  }
}, 180_000);

afterAll(async () => {
  await Promise.all([...functions.values()].map((f) => f.process.close()));
  await harness?.close();
  await moto?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A function's environment as the stack sets it (infra/leaseq-tenant.ts, infra/leaseq-function.ts). */
function functionEnvironment(
  spec: LeaseqBundleSpec,
  secretsKeyArn: string,
  alarmTopicArn: string,
): Record<string, string> {
  const env: Record<string, string> = {
    ...initEnvironment(spec),
    [ENV.table]: tableName(TENANT.tenant),
    [ENV.bucket]: BUCKET,
    [ENV.region]: REGION,
    NODE_OPTIONS: '--enable-source-maps',
    AWS_LAMBDA_FUNCTION_NAME: `leaseq-bundles-${spec.name}`,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '512',
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
  };
  if (ENV.secretsKeyId in env) env[ENV.secretsKeyId] = secretsKeyArn;
  if (ENV.alarmTopicArn in env) env[ENV.alarmTopicArn] = alarmTopicArn;
  return env;
}

function fn(name: string): { process: LambdaProcess; bundle: string } {
  const f = functions.get(name);
  if (!f) throw new Error(`no function ${name}`);
  return f;
}

/** An HTTP request to the api function as API Gateway's `ANY /{proxy+}` route delivers it. */
async function api(
  path: string,
  init: { method?: string; body?: unknown; key?: string | null; headers?: Record<string, string> } = {},
): Promise<ApiAnswer> {
  const [rawPath = '', rawQueryString = ''] = path.split('?');
  const method = init.method ?? (init.body === undefined ? 'GET' : 'POST');
  const base = sample('produce.json');
  const body = init.body === undefined ? undefined : JSON.stringify(init.body);
  const { authorization: _, 'content-length': __, ...headers } = base.headers;
  const key = init.key === undefined ? KEY : init.key;
  const event: APIGatewayProxyEventV2 = {
    ...base,
    rawPath,
    rawQueryString,
    headers: {
      ...headers,
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
      ...init.headers,
    },
    ...(rawQueryString
      ? { queryStringParameters: Object.fromEntries(new URLSearchParams(rawQueryString)) }
      : {}),
    requestContext: {
      ...base.requestContext,
      requestId: randomUUID(),
      http: { ...base.requestContext.http, method, path: rawPath },
    },
    pathParameters: { proxy: rawPath.slice(1) },
    body,
    isBase64Encoded: false,
  };
  if (body === undefined) delete event.body;
  return answerOf(await invokeApi(event));
}

function invokeApi(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const { process, bundle } = fn('api');
  return process.invoke(bundle, event, TIMEOUT_MS.api);
}

function answerOf(result: APIGatewayProxyStructuredResultV2): ApiAnswer {
  const text = result.isBase64Encoded
    ? Buffer.from(result.body ?? '', 'base64').toString()
    : (result.body ?? '');
  return {
    status: result.statusCode ?? 200,
    headers: new Headers(Object.entries(result.headers ?? {}).map(([k, v]) => [k, String(v)])),
    body: text ? JSON.parse(text) : undefined,
  };
}

const jobs = queueApi({ api }, 'jobs');

/** The next batch of a stream as its event source mapping hands it over (no records: nothing new). */
function nextBatch(stream: string): Promise<KinesisStreamEvent> {
  return harness.call(files.modules[STREAM_READER] as string, 'nextBatch', stream);
}

/** Invokes dispatch with every new batch of the jobs stream; answers how many records it was given. */
async function dispatchAll(): Promise<number> {
  let records = 0;
  for (;;) {
    const batch = await nextBatch(STREAM.jobs);
    if (batch.Records.length === 0) return records;
    const { process, bundle } = fn('dispatch');
    const answer = await process.invoke<KinesisStreamBatchResponse | undefined>(
      bundle,
      batch,
      TIMEOUT_MS.dispatch,
    );
    // A failure would have the mapping retry the batch; dispatch must admit it the first time.
    expect(answer?.batchItemFailures ?? []).toEqual([]);
    records += batch.Records.length;
  }
}

interface SweepReport {
  requeued: number;
  redriven: number;
  rested: boolean;
}
/** What the sweep's invocations did, in all. */
const swept = { requeued: 0, redriven: 0 };

/** One tick of EventBridge's schedule; the context leaves time for one pass (the stack's keeps passing for a minute). */
async function sweep(): Promise<SweepReport> {
  const { process, bundle } = fn('sweep');
  const event = {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '123456789012',
    time: new Date().toISOString(),
    region: REGION,
    resources: [`arn:aws:events:${REGION}:123456789012:rule/leaseq-bundles-SweepSchedule`],
    detail: {},
  };
  const report = await process.invoke<SweepReport>(bundle, event, 0);
  for (const k of ['requeued', 'redriven'] as const) swept[k] += report[k];
  return report;
}

/** Polls `step` until it answers a value, with generous room for a loaded machine. */
async function eventually<T>(
  step: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await step();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the deployed bundles against moto', () => {
  it('produce appends, dispatch admits, receive delivers, ack completes; a claim-checked payload goes through S3', async () => {
    const big = { blob: 'x'.repeat(4096) };
    expect(
      await jobs.produce([
        { message_id: 'order-1', key: 'customer-7', payload: { n: 1 } },
        { message_id: 'big-1', payload: big },
      ]),
    ).toEqual([
      { message_id: 'order-1', status: 'accepted' },
      { message_id: 'big-1', status: 'accepted' },
    ]);
    // Not receivable before dispatch admits it: the queue has no admission at produce.
    expect(await jobs.receive({ wait_seconds: 0 })).toEqual([]);
    expect(await dispatchAll()).toBe(2);

    const received = await jobs.receive({ max_messages: 10, wait_seconds: 0, lease_seconds: 60 });
    expect(received.map((m) => [m.message_id, m.attempt, m.key, m.payload]).sort()).toEqual([
      ['big-1', 1, null, big],
      ['order-1', 1, 'customer-7', { n: 1 }],
    ]);
    expect(await jobs.ack(received.map((m) => m.receipt))).toEqual(
      received.map((m) => ({ receipt: m.receipt, status: 'acked' })),
    );
    expect(await jobs.receive({ wait_seconds: 0 })).toEqual([]);
    expect((await api('/queues/jobs/messages/order-1')).body).toMatchObject({ state: 'acked' });
  });
});

describe('a failing message through the deployed bundles', () => {
  /** Ticks the sweep and dispatches what it put back into the stream until `id` is receivable. */
  const redelivered = (id: string) =>
    eventually(async () => {
      await sweep();
      await dispatchAll();
      const [m] = await jobs.receive({ max_messages: 1, wait_seconds: 0, lease_seconds: 60 });
      if (m) expect(m.message_id).toBe(id);
      return m;
    }, `${id} delivered again`);

  it('is retried after a nack, dead-lettered after its attempts, and redriven', async () => {
    await jobs.produce([{ message_id: 'poison-1', payload: { poison: true } }]);
    await dispatchAll();
    const [first] = await jobs.receive({ wait_seconds: 0, lease_seconds: 60, consumer_id: 'worker-1' });
    expect([first?.message_id, first?.attempt]).toEqual(['poison-1', 1]);
    expect(
      (await jobs.nack({ receipt: first?.receipt, retry_after_seconds: 0, error: 'boom 1' })).status,
    ).toBe(200);

    const requeued = swept.requeued;
    const second = await redelivered('poison-1');
    // The sweep put the due retry back into the stream, and dispatch admitted it again.
    expect(swept.requeued).toBe(requeued + 1);
    expect([second.attempt, second.payload]).toEqual([2, { poison: true }]);
    expect(
      (await jobs.nack({ receipt: second.receipt, retry_after_seconds: 0, error: 'boom 2' })).status,
    ).toBe(200);

    // The second of two attempts failed: the message is in the DLQ, with both.
    const dead = await eventually(async () => {
      await sweep();
      const res = await jobs.dlq('poison-1');
      return res.status === 200 ? res.body : undefined;
    }, 'poison-1 dead-lettered');
    expect(dead.attempts.map((a: { attempt: number; error: string }) => [a.attempt, a.error])).toEqual([
      [1, 'boom 1'],
      [2, 'boom 2'],
    ]);
    expect((await jobs.stats()).dlq_depth).toBe(1);

    const redrive = await api('/queues/jobs/redrive', {
      body: { rate_per_sec: 10, filter: { message_ids: ['poison-1'] } },
    });
    expect(redrive.status).toBe(202);
    const redriven = swept.redriven;
    const again = await redelivered('poison-1');
    expect([again.attempt, again.payload]).toEqual([1, { poison: true }]);
    // The sweep runs redrives: it moved the message back.
    expect(swept.redriven).toBe(redriven + 1);
    expect(await jobs.ack([again.receipt])).toEqual([{ receipt: again.receipt, status: 'acked' }]);
    expect((await jobs.dlq('poison-1')).status).toBe(404);
    const job = await eventually(async () => {
      const res = await api(`/queues/jobs/redrives/${redrive.body.redrive_id}`);
      return res.body.status === 'running' ? undefined : res.body;
    }, 'the redrive finished');
    expect(job).toMatchObject({ status: 'done', moved: 1 });
    const trace = (await api('/queues/jobs/messages/poison-1')).body;
    expect(trace.state).toBe('acked');
    for (const event of ['failed', 'dead_lettered', 'redriven', 'acked'])
      expect(trace.events.map((e: { event: string }) => e.event)).toContain(event);
  });
});

describe('the SQS-compatible endpoint of the deployed api', () => {
  it('makes SQS credentials sealed by KMS, and takes a message the SQS SDK signed with them', async () => {
    const made = await api('/keys', {
      body: { name: 'sqs-worker', scopes: ['produce:jobs', 'consume:jobs'], sqs_credentials: true },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const credentials: SqsCredentials = made.body.sqs_credentials;
    const text = 'hello from an SQS client';
    const signed = await sdkSignedRequest(
      credentials,
      new SendMessageCommand({ QueueUrl: `https://leaseq.example/${TENANT.tenant}/jobs`, MessageBody: text }),
      REGION,
    );
    // The SQS SDK's request as API Gateway's `POST /` route delivers it (events/apigw/sqs-unsigned.json).
    const base = sample('sqs-unsigned.json');
    const {
      'content-type': _,
      'x-amz-target': __,
      'content-length': ___,
      host: ____,
      ...gateway
    } = base.headers;
    const event = (body: string): APIGatewayProxyEventV2 => ({
      ...base,
      headers: {
        ...gateway,
        ...Object.fromEntries(Object.entries(signed.headers).map(([k, v]) => [k.toLowerCase(), String(v)])),
      },
      requestContext: { ...base.requestContext, domainName: 'leaseq.example', requestId: randomUUID() },
      body,
    });

    // The signature covers the body: one changed after signing is refused.
    const tampered = answerOf(await invokeApi(event(String(signed.body).replace('hello', 'HELLO'))));
    expect(tampered.status).toBe(403);
    const sent = answerOf(await invokeApi(event(String(signed.body))));
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.MD5OfMessageBody).toBe(createHash('md5').update(text).digest('hex'));

    expect(await dispatchAll()).toBe(1);
    const [m] = await jobs.receive({ wait_seconds: 0, lease_seconds: 60 });
    expect([m?.message_id, m?.payload, m?.attempt]).toEqual([sent.body.MessageId, text, 1]);
    expect(await jobs.ack([m?.receipt as string])).toEqual([{ receipt: m?.receipt, status: 'acked' }]);
  });
});

describe('the deployed Lambda consumer', () => {
  interface Call {
    message_id: string;
    attempt: number;
    payload: unknown;
  }

  /** Hands the consumer every new batch of its stream, as its event source mapping does. */
  async function deliver(): Promise<void> {
    const { process, bundle } = fn('consumer');
    for (;;) {
      const batch = await nextBatch(STREAM.events);
      if (batch.Records.length === 0) return;
      const answer = await process.invoke<KinesisStreamBatchResponse>(bundle, batch, TIMEOUT_MS.consumer);
      // Failures are retried by the lease layer (the sweep), not by the mapping.
      expect(answer.batchItemFailures).toEqual([]);
    }
  }

  it('handles its stream’s batches, restores a claim-checked payload, and dead-letters a poison message after the sweep’s retry', async () => {
    const big = { big: 'y'.repeat(4096) };
    expect(
      (
        await queueApi({ api }, 'events').produce([
          { message_id: 'e-1', payload: { n: 1 } },
          { message_id: 'e-big', payload: big },
          { message_id: 'e-poison', payload: { poison: true } },
        ])
      ).map((r) => r.status),
    ).toEqual(['accepted', 'accepted', 'accepted']);

    const dead = await eventually(async () => {
      await deliver();
      await sweep();
      const res = await api('/queues/events/dlq/e-poison?consumer=sample');
      return res.status === 200 ? res.body : undefined;
    }, 'e-poison dead-lettered');
    expect(dead.attempts.map((a: { attempt: number; error: string }) => [a.attempt, a.error])).toEqual([
      [1, 'poison e-poison'],
      [2, 'poison e-poison'],
    ]);

    const { process, bundle } = fn('consumer');
    const calls = await process.value<Call[]>(bundle, 'calls');
    const byId = (id: string) => calls.filter((c) => c.message_id === id).map((c) => [c.attempt, c.payload]);
    expect(byId('e-1')).toEqual([[1, { n: 1 }]]);
    expect(byId('e-big')).toEqual([[1, big]]);
    expect(byId('e-poison')).toEqual([
      [1, { poison: true }],
      [2, { poison: true }],
    ]);
    expect((await api('/queues/events/messages/e-1?consumer=sample')).body.state).toBe('acked');
  });
});

describe('the alarm topic, as the deployed functions tell it', () => {
  const alarmEvent = (alarmName: string) => {
    const event = JSON.parse(
      readFileSync(fileURLToPath(new URL('../../events/cloudwatch/alarm.json', import.meta.url)), 'utf8'),
    );
    event.alarmData.alarmName = alarmName;
    return event;
  };
  /** What the platform team's queue was told since the last look. */
  const heard = () =>
    harness.call<Record<string, unknown>[]>(
      files.modules[PROVISION] as string,
      'platformHeard',
      REGION,
      alarmTopic.queueUrl,
    );

  it("hears the sweep's queue alarms: moto's table keeps no point-in-time recovery, which the stack sets, so each queue has drift", async () => {
    await sweep();
    const told = await eventually(async () => {
      const got = await heard();
      return got.length > 0 ? got : undefined;
    }, 'the platform heard the drift');
    expect(told.map((m) => [m.AlarmName, m.NewStateValue]).sort()).toEqual([
      ['leaseq-bundles/events/drift', 'ALARM'],
      ['leaseq-bundles/jobs/drift', 'ALARM'],
    ]);
  });

  it("hears the relay tell of a CloudWatch alarm's change, shaped so the owners' filters route it", async () => {
    const { process, bundle } = fn('alarm-relay');
    // A consuming team's alarm: the platform's filter passes it by.
    await process.invoke(bundle, alarmEvent('leaseq-bundles/jobs/dlq-oldest-age'), 10_000);
    await process.invoke(bundle, alarmEvent('leaseq-bundles/tenant/sweep-silent'), 10_000);
    const messages = await eventually(async () => {
      const got = await heard();
      return got.length > 0 ? got : undefined;
    }, 'the platform heard the alarm');
    expect(messages).toEqual([
      {
        AlarmName: 'leaseq-bundles/tenant/sweep-silent',
        AlarmDescription: 'For the platform team: The sweep has not run for 15 minutes.',
        NewStateValue: 'ALARM',
        OldStateValue: 'OK',
        NewStateReason: expect.stringMatching(/^Threshold Crossed/),
        StateChangeTime: '2026-12-06T12:36:15.490+0000',
      },
    ]);
    expect(await heard()).toEqual([]);
  });
});

describe('the busy-time fan-out release', () => {
  it("deregisters a busy stream's consumer before CloudFormation deletes the stream, then answers it", async () => {
    const stream = STREAM.jobs;
    const consumer = (register = false) =>
      harness.call<string | undefined>(
        files.modules[PROVISION] as string,
        'streamConsumer',
        REGION,
        stream,
        'leaseq-dispatch',
        register,
      );
    expect(await consumer(true)).toBe('ACTIVE');
    // CloudFormation's answer goes to a presigned URL: here a server of the test's own.
    const answers: Record<string, unknown>[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      req.on('end', () => {
        answers.push(JSON.parse(body));
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // moto refuses a signed GET whose query holds an ARN, as ListEventSourceMappings' does: werkzeug
    // unescapes `%3A` and `%2F` before moto computes the signature again. Off for this call only.
    const authenticates = (on: boolean) =>
      harness.call(files.modules[LAMBDA_ROLE] as string, 'motoAuthenticates', REGION, on);
    await authenticates(false);
    try {
      const { process, bundle } = fn('fan-out-release');
      await process.invoke(
        bundle,
        {
          RequestType: 'Delete',
          ResponseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/answer`,
          StackId: 'arn:aws:cloudformation:us-east-1:123456789012:stack/Leaseq-bundles/1',
          RequestId: 'delete-1',
          LogicalResourceId: 'BusyFanOut',
          PhysicalResourceId: 'BusyFanOut-busy-fan-out',
          ResourceType: 'Custom::LeaseqBusyFanOut',
          ResourceProperties: {
            ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:release',
            Streams: [stream],
          },
        },
        60_000,
      );
    } finally {
      server.close();
      await authenticates(true);
    }
    expect(answers).toEqual([expect.objectContaining({ Status: 'SUCCESS', RequestId: 'delete-1' })]);
    expect(await consumer()).toBeUndefined();
  });
});

describe('the endpoints the deployed functions called', () => {
  it('are AWS’s regional ones, answered by moto under names its certificate was verified for', async () => {
    const hosts = Object.fromEntries(
      await Promise.all([...functions].map(async ([name, f]) => [name, await f.process.awsHosts()] as const)),
    );
    const dynamodb = `dynamodb.${REGION}.amazonaws.com`;
    const kinesis = `kinesis.${REGION}.amazonaws.com`;
    const s3 = `${BUCKET}.s3.${REGION}.amazonaws.com`;
    const sns = `sns.${REGION}.amazonaws.com`;
    expect(hosts).toEqual({
      // Produce appends to the stream and claim-checks in S3; SQS credentials are sealed by KMS.
      api: [dynamodb, kinesis, `kms.${REGION}.amazonaws.com`, s3].sort(),
      dispatch: [dynamodb],
      // The retries and redrives go back into the stream; the queues' alarms to the topic.
      sweep: [dynamodb, kinesis, sns],
      'alarm-relay': [sns],
      'fan-out-release': [kinesis, `lambda.${REGION}.amazonaws.com`].sort(),
      // The claim-checked payload is read from S3.
      consumer: [dynamodb, s3],
    });
  });
});

describe('moto’s request authentication', () => {
  it('refuses a request signed with a wrong secret: every call above was signed as AWS checks it', async () => {
    const forged = new LambdaProcess('forged', files, {
      ...sharedEnv,
      ...role,
      AWS_SECRET_ACCESS_KEY: `${role.AWS_SECRET_ACCESS_KEY}x`,
    });
    try {
      await expect(
        forged.call(files.modules[STREAM_READER] as string, 'nextBatch', STREAM.jobs),
        // moto answers a JSON service's auth errors as XML, which names nothing to the JSON
        // client (AWS answers InvalidSignatureException as JSON): the status is what is compared.
      ).rejects.toThrow(/Http403Error/);
    } finally {
      await forged.close();
    }
  });
});
