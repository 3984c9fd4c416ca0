import type { S3Client } from '@aws-sdk/client-s3';
import type { AwsJsonClient } from './aws-json.js';
import type { ConnectionsClient } from './connections.js';

/**
 * The part of an SDK v3 client that meters and fault injection hook into: its smithy
 * middleware stack. Structural, so it fits every client without naming its generics.
 */
export interface MiddlewareContext {
  clientName?: string;
  commandName?: string;
}

// biome-ignore lint/suspicious/noExplicitAny: middleware sees every command's input and output.
export type AnyArgs = { input: any; request?: unknown };
// biome-ignore lint/suspicious/noExplicitAny: see above.
export type AnyResult = { output: any; response: unknown };

export type AnyMiddleware = (
  next: (args: AnyArgs) => Promise<AnyResult>,
  context: MiddlewareContext,
) => (args: AnyArgs) => Promise<AnyResult>;

export interface MiddlewareStackLike {
  add(
    middleware: AnyMiddleware,
    options: { step: 'initialize' | 'finalizeRequest'; name: string; priority?: 'low'; override?: boolean },
  ): void;
}

/** The lean JSON clients (DynamoDB, Kinesis), the wake channel's and the SDK's S3 client share this hook. */
export type SdkClient = AwsJsonClient | S3Client | ConnectionsClient;

/** The clients' overloaded `add` signatures do not unify across clients; one cast here serves all. */
export function stackOf(client: SdkClient): MiddlewareStackLike {
  return client.middlewareStack as unknown as MiddlewareStackLike;
}

/** `DynamoDB.PutItem`, `Kinesis.PutRecords`: the name a call is counted and matched by. */
export function operationName(context: MiddlewareContext): string {
  const client = context.clientName?.replace(/Client$/, '') ?? 'AWS';
  return `${client}.${context.commandName?.replace(/Command$/, '') ?? '?'}`;
}
