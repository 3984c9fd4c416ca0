import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import { build, type Metafile } from 'esbuild';
import { ENV } from '../functions/core/runtime-config.js';
import { SERVICE } from '../functions/observability/metrics.js';
import { esbuildOptionsOf, runAfterBundling } from '../infra/esbuild-options.js';
import { type LeaseqFunctionProps, leaseqFunctionBundling } from '../infra/leaseq-function.js';
import { withoutStackOnlyFields } from '../infra/leaseq-tenant.js';

/**
 * The Lambda bundles as the stack builds them (infra/leaseq-function.ts `leaseqFunctionBundling`),
 * for bench/bundle-report.ts and test/infra/bundle-size.test.ts. The goal (docs/packaging.md): every
 * function's bundle ≤ 300 KB minified and its module init ≤ 150 ms.
 */

export const REPO = fileURLToPath(new URL('..', import.meta.url));

/** 1 KB = 1024 bytes, here and in the report. */
export const KB = 1024;
export const BUNDLE_GOAL_BYTES = 300 * KB;
export const INIT_GOAL_MS = 150;

export interface LeaseqBundleSpec {
  name: string;
  /** Relative to the repository root, as infra/leaseq-tenant.ts bundles it. */
  entry: string;
  /** What the stack sets beyond the table, bucket and region (infra/leaseq-tenant.ts). */
  environment: Record<string, string>;
  /** The props of leaseqFunction that choose its bundling, beyond the tenant file, as the stack sets them. */
  bundling?: Pick<LeaseqFunctionProps, 'bundleConsole'>;
}

/** leaseq's own functions and a sample tenant Lambda consumer (wrapped by functions/lambda-consumer). */
export const BUNDLES: readonly LeaseqBundleSpec[] = [
  {
    name: 'api',
    entry: 'functions/api/handler.ts',
    bundling: { bundleConsole: true },
    environment: {
      POWERTOOLS_SERVICE_NAME: SERVICE.api,
      [ENV.secretsKeyId]: 'arn:aws:kms:eu-west-1:123456789012:key/00000000-0000-0000-0000-000000000000',
    },
  },
  {
    name: 'dispatch',
    entry: 'functions/dispatch/handler.ts',
    environment: { POWERTOOLS_SERVICE_NAME: SERVICE.dispatch },
  },
  {
    name: 'sweep',
    entry: 'functions/sweep/handler.ts',
    environment: {
      POWERTOOLS_SERVICE_NAME: SERVICE.sweep,
      [ENV.alarmTopicArn]: 'arn:aws:sns:eu-west-1:123456789012:Leaseq-local-AlarmsTopic',
    },
  },
  {
    name: 'fan-out-release',
    entry: 'functions/fan-out-release/handler.ts',
    environment: {
      POWERTOOLS_SERVICE_NAME: 'leaseq-fan-out-release',
      [ENV.dispatchFunction]: 'Leaseq-local-Dispatch',
    },
  },
  {
    name: 'alarm-relay',
    entry: 'functions/alarm-relay/handler.ts',
    environment: {
      POWERTOOLS_SERVICE_NAME: 'leaseq-alarm-relay',
      [ENV.alarmTopicArn]: 'arn:aws:sns:eu-west-1:123456789012:Leaseq-local-AlarmsTopic',
    },
  },
  {
    name: 'consumer',
    entry: 'test/fixtures/lambda-consumer.ts',
    environment: { POWERTOOLS_SERVICE_NAME: 'leaseq-consumer-events-sample', [ENV.consumerName]: 'sample' },
  },
];

/** The tenant file bundled into the measured functions, as the stack bundles a tenant's. */
export const SAMPLE_TENANT_FILE = 'tenants/local.json';

export function sampleTenantConfig(): string {
  return JSON.stringify(
    withoutStackOnlyFields(JSON.parse(readFileSync(join(REPO, SAMPLE_TENANT_FILE), 'utf8'))),
  );
}

/**
 * The environment of a function at init, as the stack gives it, with made-up resource names and
 * no AWS credentials at all: a bundle must not need them to load.
 */
export function initEnvironment(spec: LeaseqBundleSpec): Record<string, string> {
  return {
    [ENV.table]: 'leaseq-local',
    [ENV.bucket]: 'leaseq-local-bucket',
    [ENV.region]: 'eu-west-1',
    ...spec.environment,
  };
}

export interface BuiltBundle {
  spec: LeaseqBundleSpec;
  /** The bundle (`index.mjs`) as deployed: minified, with its source map beside it. */
  code: Uint8Array;
  sourceMap: Uint8Array | undefined;
  bytes: number;
  gzipBytes: number;
  metafile: Metafile;
}

/**
 * Builds one function's bundle with the stack's options; nothing is written. `overrides` are
 * for trying a change out (what-if), never for the numbers the report or its test give.
 */
export async function buildBundle(
  spec: LeaseqBundleSpec,
  tenantConfig = sampleTenantConfig(),
  overrides: Partial<BundlingOptions> = {},
): Promise<BuiltBundle> {
  const bundling = { ...leaseqFunctionBundling({ ...spec.bundling, tenantConfig }), ...overrides };
  const result = await build({
    ...esbuildOptionsOf(bundling, spec.entry, join(REPO, '.bundle-report', spec.name)),
    // The CLI that aws-cdk-lib runs has the project root as its working directory.
    absWorkingDir: REPO,
    write: false,
    metafile: true,
    logLevel: 'error',
  });
  const code = result.outputFiles.find((f) => /\.m?js$/.test(f.path));
  if (!code) throw new Error(`${spec.name}: esbuild wrote no bundle`);
  const sourceMap = result.outputFiles.find((f) => f.path.endsWith('.map'));
  return {
    spec,
    code: code.contents,
    sourceMap: sourceMap?.contents,
    bytes: code.contents.byteLength,
    gzipBytes: gzipSync(code.contents, { level: 9 }).byteLength,
    metafile: result.metafile,
  };
}

/**
 * Writes one function's code to `outdir` as `cdk synth` stages it: the bundle (`index.mjs`), its
 * source map, and the files its hook builds beside it (the lazily loaded modules). Answers the
 * bundle's path. For test/bundles/, which runs what deploys.
 */
export async function stageBundle(
  spec: LeaseqBundleSpec,
  outdir: string,
  tenantConfig = sampleTenantConfig(),
): Promise<string> {
  const bundling = leaseqFunctionBundling({ ...spec.bundling, tenantConfig });
  const options = esbuildOptionsOf(bundling, spec.entry, outdir);
  await build({ ...options, absWorkingDir: REPO, logLevel: 'error' });
  runAfterBundling(bundling, REPO, outdir);
  return options.outfile as string;
}

/** A bundle's bytes by package (`zod`, `@aws-sdk/client-s3`, …) or, for leaseq's own code, by folder. */
export function bytesByPackage(metafile: Metafile): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [path, input] of Object.entries(output.inputs)) {
      const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1];
      const key = pkg ?? path.split('/').slice(0, 2).join('/');
      sizes.set(key, (sizes.get(key) ?? 0) + input.bytesInOutput);
    }
  }
  return new Map([...sizes].sort((a, b) => b[1] - a[1]));
}

/** Inputs of the bundle that match `pattern` (e.g. zod's locale files), with their bytes in it. */
export function inputsMatching(metafile: Metafile, pattern: RegExp): { path: string; bytes: number }[] {
  return Object.values(metafile.outputs).flatMap((output) =>
    Object.entries(output.inputs)
      .filter(([path, input]) => pattern.test(path) && input.bytesInOutput > 0)
      .map(([path, input]) => ({ path, bytes: input.bytesInOutput })),
  );
}
