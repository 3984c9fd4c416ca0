import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // DynamoDB Local's own tests need Java: only the variant runs them (npm run test:dynamodb-local).
    exclude: [
      ...configDefaults.exclude,
      ...(process.env.LEASEQ_DYNAMODB === 'dynamodb-local' ? [] : ['test/dynamodb-local/**']),
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The SDK warns on Node 20 at every client; the project pins SDK versions that support it.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', POWERTOOLS_METRICS_DISABLED: 'true' },
    // Two cores: each integration file runs its own emulators, so two at a time.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
