import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { FaultInjector } from './faults.js';
import { RequestMeter } from './meter.js';
import { S3Objects } from './s3-objects.js';
import type { SdkClient } from './sdk-client.js';

/** Where the SDK clients point: AWS itself (no endpoints) or the local emulators. */
export interface ClientOptions {
  region: string;
  endpoints?: { dynamodb: string; kinesis: string; s3: string };
  /** SDK attempts per call (standard retry strategy with backoff and jitter). */
  maxAttempts?: number;
  faults?: FaultInjector;
}

export interface AwsClients {
  dynamodb: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  kinesis: KinesisClient;
  /** Loaded on first use (aws/s3-objects.ts). */
  s3: S3Objects;
  meter: RequestMeter;
  destroy(): void;
}

const LOCAL_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export function createClients(options: ClientOptions): AwsClients {
  const local = options.endpoints;
  const common = {
    region: options.region,
    maxAttempts: options.maxAttempts ?? 4,
    ...(local ? { credentials: LOCAL_CREDENTIALS } : {}),
  };
  // kinesalite fails the SDK's default HTTP/2 handler; HTTP/1.1 keep-alive is also what Lambda uses.
  const requestHandler = new NodeHttpHandler({ connectionTimeout: 3000, requestTimeout: 10_000 });
  const dynamodb = new DynamoDBClient({
    ...common,
    requestHandler,
    ...(local ? { endpoint: local.dynamodb } : {}),
  });
  const kinesis = new KinesisClient({
    ...common,
    requestHandler,
    ...(local ? { endpoint: local.kinesis } : {}),
  });
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
  for (const client of [dynamodb, kinesis]) hook(client);
  const doc = DynamoDBDocumentClient.from(dynamodb, {
    marshallOptions: { removeUndefinedValues: true },
  });
  return {
    dynamodb,
    doc,
    kinesis,
    s3,
    meter,
    destroy() {
      dynamodb.destroy();
      kinesis.destroy();
      s3.destroy();
    },
  };
}
