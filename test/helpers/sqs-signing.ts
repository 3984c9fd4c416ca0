import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SignedRequest } from '../../functions/access/sigv4-verifier.js';
import type { SqsCredentials } from '../../functions/access/sqs-credentials.js';

/**
 * A request exactly as the real @aws-sdk/client-sqs signs it: its request handler hands the
 * signed request over instead of sending it, in the shape the SQS endpoint gives the verifier.
 */
export async function sdkSignedRequest(
  credentials: SqsCredentials,
  command: { input: object } = new SendMessageCommand({
    QueueUrl: 'https://leaseq.example/000000000000/jobs',
    MessageBody: 'hello',
  }),
  region = 'eu-west-1',
): Promise<SignedRequest> {
  let captured: SignedRequest | undefined;
  const client = new SQSClient({
    region,
    endpoint: 'https://leaseq.example',
    credentials: { accessKeyId: credentials.access_key_id, secretAccessKey: credentials.secret_access_key },
    maxAttempts: 1,
    requestHandler: {
      handle: async (request: {
        method: string;
        path: string;
        query?: Record<string, string>;
        headers: Record<string, string>;
        body?: Uint8Array | string;
      }) => {
        captured = {
          method: request.method,
          path: request.path,
          query: { ...(request.query ?? {}) },
          headers: { ...request.headers },
          body: bodyText(request.body),
        };
        throw new Error('captured, not sent');
      },
    },
  });
  await client.send(command as SendMessageCommand).catch(() => undefined);
  client.destroy();
  if (!captured) throw new Error('the SDK signed nothing');
  return captured;
}

/** The SDK's body is a Uint8Array that warns when read as a string: its bytes are read instead. */
export function bodyText(body: Uint8Array | string | undefined): string {
  if (body === undefined || typeof body === 'string') return body ?? '';
  return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
}
