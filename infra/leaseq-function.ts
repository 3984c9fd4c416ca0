import { fileURLToPath } from 'node:url';
import type { Duration } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

export interface LeaseqFunctionProps {
  /** Handler module, relative to the repository root (e.g. `functions/api/handler.ts`). */
  entry: string;
  /** The module's export that is the handler. Default `handler`. */
  handler?: string;
  /** POWERTOOLS_SERVICE_NAME: names the function in logs and metrics. */
  serviceName: string;
  environment: Record<string, string>;
  memorySize: number;
  timeout: Duration;
  /** Caps concurrent instances; unset, the function shares the account's unreserved pool. */
  reservedConcurrentExecutions?: number;
  /** Replaces the esbuild bundle (template tests); the real app leaves it unset. */
  code?: lambda.Code;
}

const REPO_ROOT = new URL('..', import.meta.url);

/** A leaseq Lambda function: the runtime, bundling and logging every leaseq function shares. */
export function leaseqFunction(
  scope: Construct,
  id: string,
  props: LeaseqFunctionProps,
): nodejs.NodejsFunction {
  return new nodejs.NodejsFunction(scope, id, {
    entry: fileURLToPath(new URL(props.entry, REPO_ROOT)),
    // With a dot the name is used as is, so the bundle and a `code` override agree on it.
    handler: `index.${props.handler ?? 'handler'}`,
    code: props.code,
    runtime: lambda.Runtime.NODEJS_22_X,
    architecture: lambda.Architecture.ARM_64,
    memorySize: props.memorySize,
    timeout: props.timeout,
    reservedConcurrentExecutions: props.reservedConcurrentExecutions,
    logGroup: new logs.LogGroup(scope, `${id}Logs`, { retention: logs.RetentionDays.ONE_MONTH }),
    environment: {
      ...props.environment,
      NODE_OPTIONS: '--enable-source-maps',
      POWERTOOLS_SERVICE_NAME: props.serviceName,
    },
    bundling: {
      format: nodejs.OutputFormat.ESM,
      target: 'node22',
      minify: true,
      sourceMap: true,
      mainFields: ['module', 'main'],
      // esbuild's ESM output has no `require`; CJS dependencies inside the bundle need one.
      banner: "import { createRequire } from 'module';const require = createRequire(import.meta.url);",
      // Bundle the SDK instead of using the runtime's copy, so the version we test is the one that runs.
      externalModules: [],
      // Synth must work on machines without Docker: esbuild from node_modules is enough.
      forceDockerBundling: false,
    },
  });
}
