import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, globalAgent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { HttpRequest } from '@smithy/core/transport';
import { NodeHttpHandler, streamCollector } from '@smithy/node-http-handler';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity } from '@smithy/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandClass } from '../../functions/aws/aws-json.js';
import { EventSourceMappingsClient } from '../../functions/aws/event-source-mappings.js';
import { AwsFanOutSwitch } from '../../functions/aws/fan-out-mappings.js';
import {
  createKinesisClient,
  DescribeStreamConsumerCommand,
  DescribeStreamSummaryCommand,
  type KinesisClient,
} from '../../functions/aws/kinesis.js';
import { operationName } from '../../functions/aws/sdk-client.js';
import { Sha256 } from '../../functions/aws/sha256.js';
import { type MotoServer, motoServerCommand, startMotoServer } from '../helpers/moto-server.js';
import { makeTestCertificate } from '../helpers/test-ca.js';
import { assumeFunctionRole } from './lambda-role.js';

/**
 * The fan-out switch (functions/aws/fan-out-mappings.ts) and its Lambda REST client against moto's
 * Kinesis and Lambda, at AWS's regional names as the bundles' test reaches them
 * (test/bundles/aws-at-moto.ts, loaded into this process), signed with a role's credentials (moto
 * checks the signatures of the first tests). moto takes event source mappings on streams only, not
 * on a stream's consumer (its awslambda/models.py, create_event_source_mapping): the mapping calls
 * are tested on the stream, and the switch's mapping on its consumer as the request it sends.
 */

const REGION = 'us-east-1';
/** moto's account: the role lambda-role.ts makes is in it. */
const ACCOUNT = '123456789012';
const STREAM = 'leaseq-fan-out-jobs';
const DISPATCH = 'leaseq-fan-out-dispatch';
const CONSUMER = 'leaseq-dispatch';
/** What the switch maps dispatch to its consumer with. */
const BUSY_MAPPING = {
  // From the oldest record: a later start would offer runs with unadmitted records before them.
  StartingPosition: 'TRIM_HORIZON',
  BatchSize: 1000,
  MaximumBatchingWindowInSeconds: 0,
  ParallelizationFactor: 1,
  FunctionResponseTypes: ['ReportBatchItemFailures'],
  BisectBatchOnFunctionError: false,
  MaximumRetryAttempts: -1,
  MaximumRecordAgeInSeconds: -1,
} as const;

const CreateStreamCommand = commandClass<{ StreamName: string; ShardCount: number }, object>(
  'CreateStream',
  (input) => input,
  (output) => output,
);

let dir: string;
let moto: MotoServer | undefined;
let recording: string;
let requestHandler: NodeHttpHandler;
let credentials: AwsCredentialIdentity;
let kinesis: KinesisClient;
let mappings: EventSourceMappingsClient;
let fanOut: AwsFanOutSwitch;
let streamArn: string;
let dispatchArn: string;

beforeAll(async () => {
  motoServerCommand(); // fails first, naming what to install
  dir = mkdtempSync(join(tmpdir(), 'leaseq-fan-out-'));
  const certificate = makeTestCertificate(dir, [`*.${REGION}.amazonaws.com`, '*.amazonaws.com']);
  // Where moto writes the requests it records (moto-api/recorder), read by the test.
  recording = join(dir, 'moto-recording.jsonl');
  process.env.MOTO_RECORDER_FILEPATH = recording;
  moto = await startMotoServer(certificate);
  process.env.LEASEQ_TEST_AWS_PORT = String(moto.port);
  await import('./aws-at-moto.js');
  // NODE_EXTRA_CA_CERTS is read as a process starts: this one gives the test's CA to its agents.
  const ca = readFileSync(certificate.ca);
  globalAgent.options.ca = ca;
  requestHandler = new NodeHttpHandler({ httpsAgent: new Agent({ keepAlive: true, ca }) });

  // The role's credentials sign everything from here on; moto checks each signature until told not to.
  const role = await assumeFunctionRole(REGION);
  credentials = {
    accessKeyId: role.AWS_ACCESS_KEY_ID,
    secretAccessKey: role.AWS_SECRET_ACCESS_KEY,
    sessionToken: role.AWS_SESSION_TOKEN,
  };
  kinesis = createKinesisClient({ region: REGION, credentials, maxAttempts: 1, requestHandler });
  mappings = new EventSourceMappingsClient({ region: REGION, credentials, requestHandler });
  fanOut = new AwsFanOutSwitch({ kinesis, mappings, dispatchFunction: DISPATCH });

  await kinesis.send(new CreateStreamCommand({ StreamName: STREAM, ShardCount: 1 }));
  const summary = await kinesis.send(new DescribeStreamSummaryCommand({ StreamName: STREAM }));
  streamArn = summary.StreamDescriptionSummary?.StreamARN as string;
  const created = JSON.parse(
    await lambdaCall('POST', '/2015-03-31/functions', {
      FunctionName: DISPATCH,
      Runtime: 'nodejs22.x',
      Role: `arn:aws:iam::${ACCOUNT}:role/leaseq-bundles-function`,
      Handler: 'index.handler',
      Code: {
        ZipFile: zipOf('index.mjs', 'export const handler = async () => ({ batchItemFailures: [] });\n'),
      },
    }),
  ) as { FunctionArn: string };
  dispatchArn = created.FunctionArn;
}, 60_000);

afterAll(async () => {
  requestHandler?.destroy();
  await moto?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A signed call of the Lambda API (what the test provisions with); its answer's body. */
async function lambdaCall(method: string, path: string, body?: object): Promise<string> {
  const signer = new SignatureV4({ service: 'lambda', region: REGION, credentials, sha256: Sha256 });
  const host = `lambda.${REGION}.amazonaws.com`;
  const request = new HttpRequest({
    protocol: 'https:',
    hostname: host,
    path,
    method,
    headers: { host, 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const { response } = await requestHandler.handle((await signer.sign(request)) as HttpRequest);
  const text = response.body ? Buffer.from(await streamCollector(response.body)).toString('utf8') : '';
  if (response.statusCode >= 300) throw new Error(`${method} ${path}: ${response.statusCode} ${text}`);
  return text;
}

/** moto's own API (not authenticated): any of its names serves. */
async function motoApi(path: string, body?: string): Promise<void> {
  const host = `sts.${REGION}.amazonaws.com`;
  const { response } = await requestHandler.handle(
    new HttpRequest({
      protocol: 'https:',
      hostname: host,
      path,
      method: 'POST',
      // As text: werkzeug would read a form-encoded body into the form (see lambda-role.ts).
      headers: { host, 'content-type': 'text/plain' },
      ...(body === undefined ? {} : { body }),
    }),
  );
  response.body?.resume?.();
  expect(response.statusCode).toBe(200);
}

/** A zip archive of one file, stored (Lambda's deployment package). */
function zipOf(name: string, text: string): string {
  const data = Buffer.from(text);
  const file = Buffer.from(name);
  const crc = crc32(data);
  const header = (size: number) => Buffer.alloc(size);
  const local = header(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(0x21, 12); // 1980-01-01
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(file.length, 26);
  const central = header(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(0x21, 14);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(file.length, 28);
  const entry = Buffer.concat([local, file, data]);
  const end = header(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + file.length, 12);
  end.writeUInt32LE(entry.length, 16);
  return Buffer.concat([entry, central, file, end]).toString('base64');
}

/** The stream's consumer of the switch's name as Kinesis describes it, or the error's name. */
async function consumer(): Promise<
  { ConsumerARN?: string; ConsumerStatus?: string; ConsumerCreationTimestamp?: Date } | string
> {
  try {
    const { ConsumerDescription } = await kinesis.send(
      new DescribeStreamConsumerCommand({ StreamARN: streamArn, ConsumerName: CONSUMER }),
    );
    return ConsumerDescription ?? 'none described';
  } catch (err) {
    return (err as Error).name;
  }
}

describe('the Lambda API client, signed as moto checks it', () => {
  // moto recomputes a GET's signature from the query as its server decodes it (an ARN's `:` and
  // `/` unescaped), so a list signed as AWS takes it is refused: its check ends with these tests.
  afterAll(() => motoApi('/moto-api/reset-auth', 'inf'));

  it('creates and deletes with the role’s credentials; a forged signature is refused', async () => {
    const forged = new EventSourceMappingsClient({
      region: REGION,
      credentials: { ...credentials, secretAccessKey: 'not-the-secret' },
      requestHandler,
    });
    const mapping = {
      FunctionName: DISPATCH,
      EventSourceArn: streamArn,
      StartingPosition: 'LATEST',
    } as const;
    const refused = await forged.create(mapping).catch((e) => e);
    expect(refused).toBeInstanceOf(Error);
    expect(refused.$metadata.httpStatusCode).toBe(403);
    expect(refused.$fault).toBe('client');

    const created = await mappings.create(mapping);
    expect(created).toMatchObject({ EventSourceArn: streamArn, FunctionArn: dispatchArn });
    await mappings.delete(created.UUID);
  });
});

describe('the Lambda API client on moto', () => {
  it('creates, lists and deletes a mapping on a stream, through its middleware stack', async () => {
    const calls: string[] = [];
    mappings.middlewareStack.add(
      (next, context) => (args) => {
        calls.push(operationName(context));
        return next(args);
      },
      { step: 'initialize', name: 'test-calls' },
    );
    const created = await mappings.create({
      ...BUSY_MAPPING,
      FunctionResponseTypes: [...BUSY_MAPPING.FunctionResponseTypes],
      FunctionName: DISPATCH,
      EventSourceArn: streamArn,
      Enabled: true,
    });
    expect(created.UUID).toMatch(/^[0-9a-f-]{36}$/);

    const listed = await mappings.list({ functionName: DISPATCH, eventSourceArn: streamArn });
    expect(listed).toEqual([
      expect.objectContaining({
        ...BUSY_MAPPING,
        UUID: created.UUID,
        EventSourceArn: streamArn,
        FunctionArn: dispatchArn,
        State: 'Enabled',
      }),
    ]);
    // Both filters hold: another source, or another function, has none.
    expect(await mappings.list({ functionName: DISPATCH, eventSourceArn: `${streamArn}-other` })).toEqual([]);
    expect(await mappings.list({ functionName: 'another', eventSourceArn: streamArn })).toEqual([]);

    await mappings.delete(created.UUID);
    expect(await mappings.list({ functionName: DISPATCH, eventSourceArn: streamArn })).toEqual([]);
    // Gone already: no error (moto answers 200 `{}` here, where AWS answers 404).
    await mappings.delete(created.UUID);
    expect(calls).toEqual([
      'Lambda.CreateEventSourceMapping',
      ...Array(3).fill('Lambda.ListEventSourceMappings'),
      'Lambda.DeleteEventSourceMapping',
      'Lambda.ListEventSourceMappings',
      'Lambda.DeleteEventSourceMapping',
    ]);
  });

  it('names a refusal by the API’s error type', async () => {
    const refused = await mappings
      .create({ FunctionName: 'no-such-function', EventSourceArn: streamArn, StartingPosition: 'LATEST' })
      .catch((e) => e);
    expect(refused.name).toBe('ResourceNotFoundException');
    expect(refused.message).toMatch(/^Function not found/);
    expect(refused.$metadata.httpStatusCode).toBe(404);
  });
});

describe('the fan-out switch on moto', () => {
  it('is off on a stream without its consumer', async () => {
    expect(await consumer()).toBe('ResourceNotFoundException');
    expect(await fanOut.state(STREAM)).toBe('off');
  });

  it('registers the consumer first, and is starting while nothing is mapped to it', async () => {
    expect(await fanOut.turnOn(STREAM)).toBe('starting');
    const registered = await consumer();
    expect(registered).toMatchObject({
      ConsumerARN: `${streamArn}/consumer/${CONSUMER}`,
      ConsumerStatus: 'ACTIVE',
    });
    // Epoch seconds on the wire, a date as the SDK gives it.
    const created = (registered as { ConsumerCreationTimestamp: Date }).ConsumerCreationTimestamp;
    expect(created).toBeInstanceOf(Date);
    expect(Math.abs(created.getTime() - Date.now())).toBeLessThan(60_000);
    expect(await fanOut.state(STREAM)).toBe('starting');
  });

  it('maps dispatch to the active consumer with the busy-time settings (moto refuses the source)', async () => {
    const { ConsumerARN } = (await consumer()) as { ConsumerARN: string };
    if (existsSync(recording)) rmSync(recording);
    await motoApi('/moto-api/recorder/start-recording');
    const refused = await fanOut.turnOn(STREAM).catch((e) => e);
    await motoApi('/moto-api/recorder/stop-recording');
    // moto's create_event_source_mapping finds no stream, queue or table of that ARN.
    expect(refused.name).toBe('ResourceNotFoundException');
    expect(refused.message).toBe('Invalid EventSourceArn');
    const sent = readFileSync(recording, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { method: string; url: string; body: string; body_encoded: boolean })
      .filter((r) => r.method === 'POST' && new URL(r.url).pathname === '/2015-03-31/event-source-mappings/');
    expect(sent).toHaveLength(1);
    const [request] = sent;
    const body = request?.body_encoded ? Buffer.from(request.body, 'base64').toString() : request?.body;
    expect(JSON.parse(body ?? '')).toEqual({
      ...BUSY_MAPPING,
      FunctionName: DISPATCH,
      EventSourceArn: ConsumerARN,
      Enabled: true,
    });
    expect(await fanOut.state(STREAM)).toBe('starting');
  });

  it('turns off by deregistering the consumer; again is harmless', async () => {
    await fanOut.turnOff(STREAM);
    expect(await consumer()).toBe('ResourceNotFoundException');
    expect(await fanOut.state(STREAM)).toBe('off');
    await fanOut.turnOff(STREAM);
    expect(await fanOut.state(STREAM)).toBe('off');
    // And on again from the start.
    expect(await fanOut.turnOn(STREAM)).toBe('starting');
    expect(await fanOut.state(STREAM)).toBe('starting');
    await fanOut.turnOff(STREAM);
    expect(await fanOut.state(STREAM)).toBe('off');
  });
});
