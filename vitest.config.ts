import { readFileSync } from 'node:fs';
import { configDefaults, defineConfig } from 'vitest/config';

// `leaseq/*` imports (examples/) resolve to the sources, as tsc, tsx and esbuild read them from
// tsconfig.json's paths; package.json's exports point at dist/, which is for installed copies.
const { paths } = JSON.parse(readFileSync(new URL('./tsconfig.json', import.meta.url), 'utf8'))
  .compilerOptions as { paths: Record<string, [string]> };
const sources = Object.fromEntries(
  Object.entries(paths).map(([name, [path]]) => [name, new URL(path, import.meta.url).pathname]),
);

export default defineConfig({
  resolve: { alias: sources },
  test: {
    include: ['test/**/*.test.ts'],
    // DynamoDB Local's own tests need Java: only the variant runs them (npm run test:dynamodb-local).
    exclude: [
      ...configDefaults.exclude,
      ...(process.env.LEASEQ_DYNAMODB === 'dynamodb-local' ? [] : ['test/dynamodb-local/**']),
      // Run after the rest, one at a time (vitest.alone.config.ts).
      'test/package/**',
      'test/console/**',
      'test/integration/fast-admission.test.ts',
      'test/integration/reshard-load.test.ts',
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
