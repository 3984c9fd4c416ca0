import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import type { RuntimeConfig } from '../../functions/core/runtime-config.js';
import { buildApp } from '../../infra/build-app.js';
import { ENVIRONMENT_LIMIT_BYTES, tenantConfigDefine } from '../../infra/leaseq-function.js';
import { owned } from '../helpers/owned.js';

/**
 * The tenant file reaches the functions in their bundles, not their environment, which Lambda
 * caps at 4 KB: a tenant of 30 queues and keys synthesizes, and a bundle built with the stack's
 * `define` reads it back.
 */

const functionCode = lambda.Code.fromInline('export const handler = async () => ({ statusCode: 200 });');
const REPO = fileURLToPath(new URL('../../', import.meta.url));

const bigTenant = owned({
  tenant: 'big',
  queues: Object.fromEntries(
    Array.from({ length: 30 }, (_, i) => [`queue-number-${i}`, { shards: 2, lease_seconds: 60 }]),
  ),
  api_keys: Array.from({ length: 30 }, (_, i) => ({
    name: `service-${i}`,
    sha256: 'a'.repeat(64),
    scopes: [`produce:queue-number-${i}`, `consume:queue-number-${i}`],
  })),
});

describe('the bundled tenant config', () => {
  it('lets a tenant larger than Lambda’s environment synthesize, its functions’ environments small', () => {
    expect(JSON.stringify(bigTenant).length).toBeGreaterThan(ENVIRONMENT_LIMIT_BYTES);
    const { stack } = buildApp(bigTenant, { functionCode });
    // The alarm owners are the stack's alone.
    expect(JSON.parse(stack.tenant.tenantConfig)).toEqual({ ...bigTenant, alarms: undefined });
  });

  it('is what a function built with the stack’s define reads, with no environment variable for it', async () => {
    const json = JSON.stringify(bigTenant);
    const out = await build({
      stdin: {
        contents: "export { runtimeConfigFromEnv } from './functions/core/runtime-config.ts';",
        resolveDir: REPO,
        loader: 'ts',
      },
      bundle: true,
      format: 'esm',
      platform: 'node',
      write: false,
      define: tenantConfigDefine(json),
    });
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-bundle-'));
    try {
      const file = join(dir, 'config.mjs');
      writeFileSync(file, out.outputFiles[0]?.text ?? '');
      const bundled = (await import(pathToFileURL(file).href)) as {
        runtimeConfigFromEnv: (env: Record<string, string>) => RuntimeConfig;
      };
      const config = bundled.runtimeConfigFromEnv({
        LEASEQ_TABLE: 'table',
        LEASEQ_BUCKET: 'bucket',
        AWS_REGION: 'eu-west-1',
      });
      expect(config.tenant.tenant).toBe('big');
      expect(Object.keys(config.tenant.queues)).toHaveLength(30);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a function environment over 4 KB at synth, not at deploy', () => {
    const { stack } = buildApp(owned({ tenant: 'env', queues: { jobs: {} } }), { functionCode });
    expect(() =>
      stack.tenant.addFunction('Huge', {
        entry: 'functions/api/handler.ts',
        serviceName: 'leaseq-huge',
        environment: { BIG: 'x'.repeat(ENVIRONMENT_LIMIT_BYTES) },
        memorySize: 128,
        timeout: Duration.seconds(10),
      }),
    ).toThrow(/the environment of Huge is \d+ bytes; Lambda takes 4096/);
  });
});
