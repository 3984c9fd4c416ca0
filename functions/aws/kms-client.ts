import {
  DecryptCommand,
  type DecryptCommandInput,
  EncryptCommand,
  type EncryptCommandInput,
  type KMSClient,
} from '@aws-sdk/client-kms';

export { KMSClient } from '@aws-sdk/client-kms';

/**
 * The two KMS calls that seal and open SQS credentials' secrets (access/secret-box.ts). Loaded on
 * first use (aws/kms.ts): the api bundle keeps the KMS client in a file of its own
 * (infra/leaseq-function.ts), so only an instance that makes or checks SQS credentials parses it.
 */
export interface KmsCalls {
  encrypt(input: EncryptCommandInput): Promise<{ CiphertextBlob?: Uint8Array }>;
  decrypt(input: DecryptCommandInput): Promise<{ Plaintext?: Uint8Array }>;
}

export function kmsCalls(client: KMSClient): KmsCalls {
  return {
    encrypt: (input) => client.send(new EncryptCommand(input)),
    decrypt: (input) => client.send(new DecryptCommand(input)),
  };
}
