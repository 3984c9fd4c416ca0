import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseTenantConfig } from '../../functions/core/config.js';
import { importConsumers } from '../../infra/consumer-modules.js';

/** `cdk synth|deploy` runs infra/app.ts: it names no tenant by default, so nothing deploys by mistake. */

const REPO = fileURLToPath(new URL('../../', import.meta.url));

function app(context?: Record<string, string>) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'infra/app.ts'], {
    cwd: REPO,
    encoding: 'utf8',
    env: {
      ...process.env,
      ...(context ? { CDK_CONTEXT_JSON: JSON.stringify(context) } : {}),
      CDK_OUTDIR: mkdtempSync(join(tmpdir(), 'leaseq-cdk-out-')),
    },
    timeout: 60_000,
  });
}

describe('the CDK app', () => {
  it('refuses to run without -c tenant=<name>, in one line', () => {
    const run = app();
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe(
      'name the tenant to synthesize or deploy: npx cdk deploy -c tenant=<name> (tenants/<name>.json)',
    );
  });

  it('says which tenant file is missing or wrong, without a stack trace', () => {
    const run = app({ tenant: 'no-such-tenant' });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/tenants\/no-such-tenant\.json/);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses, as npm start does and with its words, a consumer made for another queue or none', async () => {
    const declared = (handler: string, entry = 'test/fixtures/consumer-operations.ts') =>
      parseTenantConfig({
        tenant: 'x',
        queues: { other: { shards: 1, consumers: [{ name: 'billing', entry, handler }] } },
      });
    await expect(importConsumers(declared('billing'))).rejects.toThrow(
      'consumer billing of other (test/fixtures/consumer-operations.ts): the handler consumes events/billing, but the tenant file declares it for other/billing',
    );
    await expect(importConsumers(declared('clientFromEnv', 'examples/env.ts'))).rejects.toThrow(
      'consumer billing of other (examples/env.ts): the export is not a handler made by leaseqConsumer()',
    );
    await expect(importConsumers(declared('nothing'))).rejects.toThrow('the module has no export "nothing"');
  });
});
