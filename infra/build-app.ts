import { App } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { parseTenantConfig } from '../functions/core/config.js';
import { checkPayloadSchemas } from '../functions/core/payload-schema.js';
import { applyNagChecks } from './nag.js';
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
 * Validates a tenant file and adds its stack, `Leaseq-<tenant>`; throws ConfigError when invalid.
 * The app is checked with cdk-nag's AwsSolutions pack: an unacknowledged finding fails its synthesis.
 */
export function buildApp(
  tenantFile: unknown,
  options: BuildAppOptions = {},
): { app: App; stack: TenantStack } {
  const config = parseTenantConfig(tenantFile, options.source);
  checkPayloadSchemas(config, options.source);
  // A copied file that still names another tenant would deploy over that tenant's stack.
  if (options.tenant !== undefined && config.tenant !== options.tenant) {
    throw new Error(
      `${options.source ?? 'tenant file'} declares tenant "${config.tenant}", not "${options.tenant}"`,
    );
  }
  const app = options.app ?? new App();
  applyNagChecks(app);
  const stack = new TenantStack(app, `Leaseq-${config.tenant}`, {
    tenantFile,
    config,
    functionCode: options.functionCode,
  });
  return { app, stack };
}
