import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';

/**
 * What leaseq's Lambda bundles use instead of `@aws-sdk/credential-provider-node`
 * (infra/leaseq-function.ts aliases that package here; the same export): the role's credentials
 * Lambda puts in every function's environment. The default chain's other sources (SSO, profiles,
 * web identity, containers, instance metadata) never answer on Lambda and were ~100 KB of each
 * bundle. Read here rather than through the SDK's `fromEnv`, whose imports (its feature flags,
 * its error class) kept another ~17 KB of endpoint and config code in every bundle.
 */
export const defaultProvider =
  (_init?: unknown): AwsCredentialIdentityProvider =>
  async (): Promise<AwsCredentialIdentity> => {
    const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN } = process.env;
    if (!AWS_ACCESS_KEY_ID || !AWS_SECRET_ACCESS_KEY)
      throw Object.assign(new Error('Unable to find environment variable credentials.'), {
        name: 'CredentialsProviderError',
      });
    return {
      accessKeyId: AWS_ACCESS_KEY_ID,
      secretAccessKey: AWS_SECRET_ACCESS_KEY,
      ...(AWS_SESSION_TOKEN ? { sessionToken: AWS_SESSION_TOKEN } : {}),
    };
  };
