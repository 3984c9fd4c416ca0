import { fileURLToPath } from 'node:url';
import { App, Validations } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { LeaseqTenantConfig } from './leaseq-tenant.js';
import { parseTenantFile } from './tenant-file.js';
import { TenantStack } from './tenant-stack.js';

export interface BuildAppOptions {
  /** The app to add the stack to; a new one by default (the CLI passes its own, which carries `-c`). */
  app?: App;
  /** Names the tenant file in validation errors. */
  source?: string;
  /** The tenant the file must declare (the CLI's `-c tenant`). */
  tenant?: string;
  /** Replaces the esbuild bundle of every function (template tests). */
  functionCode?: lambda.Code;
}

/**
 * cdk-nag (v3) on the app: the AwsSolutions pack runs as a policy validation plugin when the app
 * is synthesized (`cdk synth|deploy`, and `Template.fromStack` in the tests), and a finding that
 * is not acknowledged fails synthesis with the report. Acknowledged rules are also written into
 * the template's resource Metadata (`cdk_nag.rules_to_suppress`), so a reviewer sees them there.
 */
const checkedApps = new WeakSet<App>();

function applyNagChecks(app: App): void {
  // buildApp may add several tenants to one app; the pack is registered once.
  if (checkedApps.has(app)) return;
  checkedApps.add(app);
  Validations.of(app).addPlugins(
    new AwsSolutionsChecks(app, { verbose: true, writeSuppressionsToCloudFormation: true }),
  );
}

/** This repository: the tenant files' consumer `entry` paths resolve from it. */
export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

/**
 * Validates a tenant file and adds its stack, `Leaseq-<tenant>`; throws ConfigError when invalid.
 * The app is checked with cdk-nag's AwsSolutions pack: an unacknowledged finding fails its synthesis.
 */
export function buildApp(
  tenantFile: unknown,
  options: BuildAppOptions = {},
): { app: App; stack: TenantStack } {
  // The stack is named after the tenant, so the file is read for its name first.
  const { config } = parseTenantFile(tenantFile, options.source ?? 'tenant file');
  // A copied file that still names another tenant would deploy over that tenant's stack.
  if (options.tenant !== undefined && config.tenant !== options.tenant) {
    throw new Error(
      `${options.source ?? 'tenant file'} declares tenant "${config.tenant}", not "${options.tenant}"`,
    );
  }
  const app = options.app ?? new App();
  applyNagChecks(app);
  const stack = new TenantStack(app, `Leaseq-${config.tenant}`, {
    tenant: tenantFile as LeaseqTenantConfig, // valid: parsed above
    source: options.source,
    projectRoot: REPO_ROOT,
    functionCode: options.functionCode,
  });
  return { app, stack };
}
