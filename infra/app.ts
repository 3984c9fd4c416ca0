import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { buildApp, REPO_ROOT } from './build-app.js';
import { LeaseqTenant, type LeaseqTenantConfig } from './leaseq-tenant.js';
import { loadTenantFile } from './tenant-file.js';

/** `cdk synth|deploy -c tenant=<name>`: one stack for tenants/<name>.json. */

const app = new App();
const named: unknown = app.node.tryGetContext('tenant');
// No default: a bare `cdk deploy` must not deploy the local tenant (which has no keys) by mistake.
if (named === undefined) {
  console.error(
    'name the tenant to synthesize or deploy: npx cdk deploy -c tenant=<name> (tenants/<name>.json)',
  );
  process.exit(1);
}
const tenant = String(named);

function tenantFile(): unknown {
  // The name becomes a path, so it is checked before it is used as one.
  if (!/^[a-z0-9-]{1,32}$/.test(tenant))
    throw new Error(`-c tenant=${tenant}: tenant names are 1-32 of [a-z0-9-]`);
  const relative = `tenants/${tenant}.json`;
  return loadTenantFile(join(REPO_ROOT, relative), relative);
}

try {
  const file = tenantFile();
  const source = `tenants/${tenant}.json`;
  // What `npm start` refuses, synth refuses: a consumer module not made for the queue it is
  // declared on. Checked before buildApp bundles the modules, so the message is this one.
  await LeaseqTenant.checkConsumers({ tenant: file as LeaseqTenantConfig, source, projectRoot: REPO_ROOT });
  buildApp(file, { app, source, tenant });
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
