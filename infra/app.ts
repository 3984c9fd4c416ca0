import { fileURLToPath } from 'node:url';
import { App } from 'aws-cdk-lib';
import { buildApp } from './build-app.js';
import { loadTenantFile } from './tenant-file.js';

/** `cdk synth|deploy -c tenant=<name>`: one stack for tenants/<name>.json. */

const app = new App();
const tenant = String(app.node.tryGetContext('tenant') ?? 'local');

function tenantFile(): unknown {
  // The name becomes a path, so it is checked before it is used as one.
  if (!/^[a-z0-9-]{1,32}$/.test(tenant))
    throw new Error(`-c tenant=${tenant}: tenant names are 1-32 of [a-z0-9-]`);
  const relative = `tenants/${tenant}.json`;
  return loadTenantFile(fileURLToPath(new URL(`../${relative}`, import.meta.url)), relative);
}

try {
  buildApp(tenantFile(), { app, source: `tenants/${tenant}.json`, tenant });
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
