import type { KMSClientConfig } from '@aws-sdk/client-kms';
import type { KmsCalls } from './kms-client.js';

/** KMS's calls with the client made on first use, from `./kms-client.js` (a file beside the bundle). */
export function lazyKms(config: KMSClientConfig): KmsCalls {
  let loaded: Promise<KmsCalls> | undefined;
  const calls = () =>
    (loaded ??= import('./kms-client.js').then((module) => module.kmsCalls(new module.KMSClient(config))));
  return {
    encrypt: async (input) => (await calls()).encrypt(input),
    decrypt: async (input) => (await calls()).decrypt(input),
  };
}
