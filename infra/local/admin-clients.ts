import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { type ClientOptions, createRequestHandler, LOCAL_CREDENTIALS } from '../../functions/aws/clients.js';

/**
 * The SDK's generated clients, for what only the local runtime and tests do: create, describe
 * and wait for tables and streams. The functions make their data calls with the lean clients
 * (functions/aws/aws-json.ts), which know only those calls.
 */
export interface AdminClients {
  dynamodb: DynamoDBClient;
  kinesis: KinesisClient;
  destroy(): void;
}

export function createAdminClients(
  endpoints: NonNullable<ClientOptions['endpoints']>,
  region = 'us-east-1',
): AdminClients {
  const requestHandler = createRequestHandler();
  const common = { region, credentials: LOCAL_CREDENTIALS, requestHandler };
  const dynamodb = new DynamoDBClient({ ...common, endpoint: endpoints.dynamodb });
  const kinesis = new KinesisClient({ ...common, endpoint: endpoints.kinesis });
  return {
    dynamodb,
    kinesis,
    destroy() {
      requestHandler.destroy();
    },
  };
}
