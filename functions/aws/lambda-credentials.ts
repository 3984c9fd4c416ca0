import { fromEnv } from '@aws-sdk/credential-provider-env';

/**
 * What the SDK clients in leaseq's Lambda bundles use instead of `@aws-sdk/credential-provider-node`
 * (infra/leaseq-function.ts aliases that package here): Lambda hands every function its role's
 * credentials in the environment, and the default chain's other sources (SSO, profiles, web
 * identity, containers, instance metadata), which never answer on Lambda, were ~100 KB of each
 * bundle and ~25 ms of its init. The same export the clients import from that package.
 */
export const defaultProvider = (_init?: unknown) => fromEnv();
