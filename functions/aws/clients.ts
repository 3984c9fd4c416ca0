import { NodeHttpHandler } from '@smithy/node-http-handler';
import { ConnectionsClient } from './connections.js';
import { createDocumentClient, type DocumentClient } from './dynamodb.js';
import type { FaultInjector } from './faults.js';
import { createKinesisClient, type KinesisClient } from './kinesis.js';
import { RequestMeter } from './meter.js';
import { S3Objects } from './s3-objects.js';
import type { SdkClient } from './sdk-client.js';

/** Where the SDK clients point: AWS itself (no endpoints) or the local emulators. */
export interface ClientOptions {
  region: string;
  /** `kinesisFanOut`: where a mapping on enhanced fan-out reads (the local runtime's stand-in for the push). */
  endpoints?: { dynamodb: string; kinesis: string; s3: string; kinesisFanOut?: string };
  /** SDK attempts per call (standard retry strategy with backoff and jitter). */
  maxAttempts?: number;
  faults?: FaultInjector;
  /** The wake channel's management endpoint (RuntimeConfig.channelEndpoint); none, no channel. */
  channelEndpoint?: string;
}

export interface AwsClients {
  /** DynamoDB with native values (aws/dynamodb.ts). */
  doc: DocumentClient;
  kinesis: KinesisClient;
  /** What mappings on enhanced fan-out read with, locally (ClientOptions.endpoints.kinesisFanOut). */
  fanOutKinesis?: KinesisClient;
  /** Loaded on first use (aws/s3-objects.ts). */
  s3: S3Objects;
  meter: RequestMeter;
  /** The wake channel's connections (API Gateway's management API), where the stack has one. */
  connections?: ConnectionsClient;
  destroy(): void;
}

/** s3rver takes only this access key id; dynalite and kinesalite take any. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

/** HTTP/1.1 with keep-alive, as Lambda uses (kinesalite also fails the SDK's default HTTP/2 handler). */
export function createRequestHandler(): NodeHttpHandler {
  return new NodeHttpHandler({ connectionTimeout: 3000, requestTimeout: 10_000 });
}

export function createClients(options: ClientOptions): AwsClients {
  const local = options.endpoints;
  const common = {
    region: options.region,
    maxAttempts: options.maxAttempts ?? 4,
    ...(local ? { credentials: LOCAL_CREDENTIALS } : {}),
  };
  const requestHandler = createRequestHandler();
  const doc = createDocumentClient({
    ...common,
    requestHandler,
    ...(local ? { endpoint: local.dynamodb } : {}),
  });
  const kinesis = createKinesisClient({
    ...common,
    requestHandler,
    ...(local ? { endpoint: local.kinesis } : {}),
  });
  // Sockets of its own: the push does not queue behind the functions' calls.
  const fanOutKinesis = local?.kinesisFanOut
    ? createKinesisClient({
        ...common,
        requestHandler: createRequestHandler(),
        endpoint: local.kinesisFanOut,
      })
    : undefined;
  const meter = new RequestMeter();
  const hook = (client: SdkClient) => {
    meter.attach(client);
    options.faults?.attach(client);
  };
  const s3 = new S3Objects(
    {
      ...common,
      requestHandler,
      ...(local
        ? {
            endpoint: local.s3,
            forcePathStyle: true,
            // s3rver stores aws-chunked bodies verbatim unless checksums are only sent when required.
            requestChecksumCalculation: 'WHEN_REQUIRED',
            responseChecksumValidation: 'WHEN_REQUIRED',
          }
        : {}),
    },
    hook,
  );
  const connections = options.channelEndpoint
    ? new ConnectionsClient({ ...common, requestHandler, endpoint: options.channelEndpoint })
    : undefined;
  for (const client of [doc, kinesis, ...(connections ? [connections] : [])]) hook(client);
  // The push's stand-in is left out of the meter: a push is billed by the GB, not per call.
  return {
    doc,
    kinesis,
    ...(fanOutKinesis ? { fanOutKinesis } : {}),
    s3,
    meter,
    ...(connections ? { connections } : {}),
    destroy() {
      // One HTTP handler serves the other clients.
      requestHandler.destroy();
      fanOutKinesis?.destroy();
      s3.destroy();
    },
  };
}
