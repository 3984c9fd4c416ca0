import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Duration } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { BUNDLED_TENANT_CONFIG } from '../functions/core/runtime-config.js';
import { buildConsoleAssets, consoleAssetsDefine } from './console-assets.js';
import { acknowledgeNag } from './nag.js';

export interface LeaseqFunctionProps {
  /** Handler module, an absolute path (LeaseqTenant resolves leaseq's own and the team's consumers). */
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
  /** The tenant file as JSON, bundled into the code (runtime-config.ts BUNDLED_TENANT_CONFIG). */
  tenantConfig?: string;
  /** Bundles the browser console's built files into the code (the api serves them; infra/console-assets.ts). */
  bundleConsole?: boolean;
}

/** Lambda's limit on a function's environment: every name and value together. */
export const ENVIRONMENT_LIMIT_BYTES = 4096;

/** esbuild's `define` that bundles the tenant file: the identifier becomes a string literal. */
export function tenantConfigDefine(json: string): Record<string, string> {
  return { [BUNDLED_TENANT_CONFIG]: JSON.stringify(json) };
}

/**
 * The module the SDK's default credential chain is replaced by in every bundle (its reason is
 * there), resolved from this file: the sources in the repository, their JavaScript in the package.
 */
const SOURCE_EXTENSION = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/**
 * leaseq's own handler modules, resolved from this module rather than the app's directory: the
 * TypeScript sources in the repository (run through tsx), their compiled JavaScript beside this
 * file in the package's dist/, which NodejsFunction bundles the same way.
 */
export const ownHandler = (name: 'api' | 'dispatch' | 'sweep' | 'alarm-relay' | 'fan-out-release') =>
  fileURLToPath(new URL(`../functions/${name}/handler${SOURCE_EXTENSION}`, import.meta.url));
const LAMBDA_CREDENTIALS = fileURLToPath(
  new URL(`../functions/aws/lambda-credentials${SOURCE_EXTENSION}`, import.meta.url),
);

/**
 * Modules leaseq imports on first use, each as `./<name>.js` from a module beside it: left out of
 * every bundle (external) and built into files of their own beside it, so an instance that never
 * needs them does not parse them at init. The S3 client (aws/s3-objects.ts: a quarter of a bundle,
 * used only by claim-checked payloads and segments over 8 KB), the KMS client (aws/kms.ts: only
 * the api's SQS credentials), the SNS client (aws/sns.ts: only the sweep, when an alarm changes), Ajv (core/payload-check.ts: only for queues with a payload schema),
 * the OpenAPI generator (api/app.ts: only `GET /openapi.json`), the DLQ's grouping by error
 * (operations/dead-letter-errors.ts: only `GET /queues/{queue}/dlq-errors`), the SQS-compatible
 * endpoint with its verifier of signed requests (sqs/route.ts: only `POST /`), the usage's reading and arithmetic (operations/usage.ts:
 * only `GET /usage`), the queues' alarm rules (operations/alarm-list.ts: only `GET /alarms`), a message's trace (operations/traces.ts: only
 * `GET /queues/{queue}/messages/{id}`) and the console's assets (console/assets.ts: only the
 * console's pages).
 */
const LAZY_MODULES = [
  'aws/s3-client',
  'aws/kms-client',
  'access/secret-box',
  'aws/sns-client',
  'core/payload-validator',
  'api/openapi',
  'operations/dead-letter-grouping',
  'sqs/endpoint',
  'operations/usage-report',
  'operations/alarm-list',
  'operations/trace',
  'console/bundled-assets',
].map((path) => ({
  import: `./${path.split('/')[1]}.js`,
  entry: fileURLToPath(new URL(`../functions/${path}${SOURCE_EXTENSION}`, import.meta.url)),
}));

/**
 * The bundle's options the lazily loaded files are built with; `externalModules` is the bundle's
 * own, and the rest is not esbuild's.
 */
const LAZY_BUILD_OPTIONS = new Set([
  'format',
  'target',
  'minify',
  'sourceMap',
  'sourcesContent',
  'mainFields',
  'banner',
  'esbuildArgs',
  'define',
  'externalModules',
  'forceDockerBundling',
]);

/** POSIX shell quoting: NodejsFunction runs command hooks with `bash -c`. */
function shellQuote(arg: string): string {
  return `'${arg.replaceAll("'", "'\\''")}'`;
}

/**
 * The command that builds the lazily loaded modules beside a bundle, with the bundle's own options
 * (target, minify, source map, main fields, banner, the credentials alias), and marks the folder's
 * `.js` files as ES modules. esbuild is the one NodejsFunction itself runs (a peer dependency).
 */
function lazyModulesBuild(main: nodejs.BundlingOptions, outputDir: string): string {
  // As infra/esbuild-options.ts does for the report: an option of the bundle not carried over
  // here is refused, so the files beside a bundle cannot quietly be built differently from it.
  for (const key of Object.keys(main))
    if (!LAZY_BUILD_OPTIONS.has(key)) throw new Error(`bundling.${key}: carry it over in lazyModulesBuild`);
  for (const flag of Object.keys(main.esbuildArgs ?? {}))
    if (flag !== '--alias') throw new Error(`esbuildArgs ${flag}: carry it over in lazyModulesBuild`);
  const esbuild = createRequire(import.meta.url).resolve('esbuild/bin/esbuild');
  const args = [
    ...LAZY_MODULES.map((m) => m.entry),
    // One lazy file's import of another loads that file, so both see one module (one error class).
    ...LAZY_MODULES.map((m) => `--external:${m.import}`),
    '--bundle',
    '--platform=node',
    `--format=${main.format}`,
    `--target=${main.target}`,
    ...(main.minify ? ['--minify'] : []),
    ...(main.sourceMap ? ['--sourcemap'] : []),
    ...(main.sourcesContent === false ? ['--sources-content=false'] : []),
    ...(main.mainFields ? [`--main-fields=${main.mainFields.join(',')}`] : []),
    ...(main.banner ? [`--banner:js=${main.banner}`] : []),
    // The console's assets are defined for console/bundled-assets.ts, one of these files.
    ...Object.entries(main.define ?? {}).map(([name, value]) => `--define:${name}=${value}`),
    `--alias:${main.esbuildArgs?.['--alias']}`,
    '--log-level=warning',
    '--entry-names=[name]',
    `--outdir=${outputDir}`,
  ];
  const packageJson = join(outputDir, 'package.json');
  return `${[esbuild, ...args].map(shellQuote).join(' ')} && printf '{"type":"module"}' > ${shellQuote(packageJson)}`;
}

/**
 * How every leaseq function is bundled (NodejsFunction's `bundling`), given esbuild's `define`.
 * bench/bundle-report.ts and test/infra/bundle-size.test.ts build with these very options
 * (infra/esbuild-options.ts turns them into esbuild's), so what they measure is what deploys.
 */
export function leaseqBundling(define: Record<string, string> = {}): nodejs.BundlingOptions {
  const main: nodejs.BundlingOptions = {
    ...(Object.keys(define).length > 0 ? { define } : {}),
    format: nodejs.OutputFormat.ESM,
    target: 'node22',
    minify: true,
    sourceMap: true,
    // Stack traces map through the names and positions alone; the sources themselves would make
    // the map 3.4 MB instead of 1.2 MB, which Node parses at init under --enable-source-maps.
    sourcesContent: false,
    mainFields: ['module', 'main'],
    // esbuild's ESM output has no `require`; CJS dependencies inside the bundle need one.
    banner: "import { createRequire } from 'module';const require = createRequire(import.meta.url);",
    // Bundle the SDK instead of using the runtime's copy, so the version we test is the one that
    // runs; and its init is half of the unbundled SDK's (docs/decisions/0017-sdk-bundled-and-pinned.md). The
    // modules loaded on first use (LAZY_MODULES above) are files of their own beside the bundle.
    externalModules: LAZY_MODULES.map((m) => m.import),
    esbuildArgs: { '--alias': `@aws-sdk/credential-provider-node=${LAMBDA_CREDENTIALS}` },
    // Synth must work on machines without Docker: esbuild from node_modules is enough.
    forceDockerBundling: false,
  };
  return {
    ...main,
    commandHooks: {
      beforeBundling: () => [],
      beforeInstall: () => [],
      afterBundling: (_inputDir, outputDir) => [lazyModulesBuild(main, outputDir)],
    },
  };
}

/** The `bundling` of one leaseq function: leaseqBundling with the defines its props ask for. */
export function leaseqFunctionBundling(
  props: Pick<LeaseqFunctionProps, 'tenantConfig' | 'bundleConsole' | 'code'>,
): nodejs.BundlingOptions {
  return leaseqBundling({
    ...(props.tenantConfig !== undefined ? tenantConfigDefine(props.tenantConfig) : {}),
    // Built only where it is bundled: a `code` override (template tests) has no use for it.
    ...(props.bundleConsole && !props.code ? consoleAssetsDefine(buildConsoleAssets()) : {}),
  });
}

/** A leaseq Lambda function: the runtime, bundling and logging every leaseq function shares. */
export function leaseqFunction(
  scope: Construct,
  id: string,
  props: LeaseqFunctionProps,
): nodejs.NodejsFunction {
  const logGroup = new logs.LogGroup(scope, `${id}Logs`, { retention: logs.RetentionDays.ONE_MONTH });
  // A role of its own instead of AWSLambdaBasicExecutionRole, which lets a function write to
  // every log group of the account (another tenant's too): this one writes to its own only.
  const role = new iam.Role(scope, `${id}ServiceRole`, {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
  });
  logGroup.grantWrite(role);
  const environment = {
    ...props.environment,
    NODE_OPTIONS: '--enable-source-maps',
    POWERTOOLS_SERVICE_NAME: props.serviceName,
  };
  // Synth refuses what Lambda would refuse at deploy time, minutes later.
  const envBytes = Object.entries(environment).reduce(
    (n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v),
    0,
  );
  if (envBytes > ENVIRONMENT_LIMIT_BYTES)
    throw new Error(`the environment of ${id} is ${envBytes} bytes; Lambda takes ${ENVIRONMENT_LIMIT_BYTES}`);
  const fn = new nodejs.NodejsFunction(scope, id, {
    entry: props.entry,
    // With a dot the name is used as is, so the bundle and a `code` override agree on it.
    handler: `index.${props.handler ?? 'handler'}`,
    code: props.code,
    runtime: lambda.Runtime.NODEJS_22_X,
    architecture: lambda.Architecture.ARM_64,
    memorySize: props.memorySize,
    timeout: props.timeout,
    reservedConcurrentExecutions: props.reservedConcurrentExecutions,
    role,
    logGroup,
    environment,
    bundling: leaseqFunctionBundling(props),
  });
  // On the CfnFunction itself: L1 judges nothing else.
  acknowledgeNag(fn.node.defaultChild as Construct, {
    id: 'AwsSolutions-L1',
    reason:
      'Pinned to nodejs22.x on purpose (a supported LTS runtime, deprecated by Lambda on ' +
      '2027-04-30): the esbuild bundle targets node22, and nodejs24.x, which L1 asks for as the ' +
      'newest runtime aws-cdk-lib knows, no longer runs callback-style handlers, which a ' +
      "tenant's own Lambda consumer may export. Moving the runtime and the bundle target together " +
      'is a change of its own, and L1 fails again whenever aws-cdk-lib learns a newer runtime.',
  });
  return fn;
}
