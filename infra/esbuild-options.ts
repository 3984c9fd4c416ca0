import { execFileSync } from 'node:child_process';
import type { BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';

/**
 * NodejsFunction's `bundling` as options of esbuild's JS API: the same build aws-cdk-lib runs
 * with esbuild's CLI (`esbuild --bundle <entry> --platform=node --outfile=<out>/index.mjs …`, see
 * `buildEsbuildArgs` in aws-cdk-lib/aws-lambda-nodejs/lib/bundling.js), for the bundle report and
 * its test. An option it does not know how to map is refused rather than left out, so the
 * measured bundle cannot quietly differ from the deployed one.
 */

/** Options that change nothing esbuild produces (how or where the bundling runs). */
const NOT_ESBUILD = new Set([
  'forceDockerBundling',
  'dockerImage',
  'buildArgs',
  'environment',
  'bundlingFileAccess',
  'assetHash',
  'esbuildVersion',
  'network',
  'securityOpt',
  'user',
  'volumes',
  'volumesFrom',
  'workingDirectory',
  'entrypoint',
  'command',
  'logLevel',
  // Not esbuild's: run after the build by `runAfterBundling` below.
  'commandHooks',
]);

const MAPPED = new Set([
  'target',
  'format',
  'minify',
  'sourceMap',
  'sourceMapMode',
  'sourcesContent',
  'externalModules',
  'loader',
  'define',
  'keepNames',
  'tsconfig',
  'metafile',
  'banner',
  'footer',
  'mainFields',
  'inject',
  'esbuildArgs',
]);

/** `--alias:a=b`-style flags NodejsFunction passes through (`esbuildArgs`), as JS API options. */
function esbuildArgsOptions(args: NonNullable<BundlingOptions['esbuildArgs']>): BuildOptions {
  const options: BuildOptions = {};
  for (const [flag, value] of Object.entries(args)) {
    const items = Array.isArray(value) ? value : [value];
    if (flag === '--alias') {
      options.alias = { ...options.alias };
      for (const item of items) {
        const text = String(item);
        const eq = text.indexOf('=');
        if (eq < 1) throw new Error(`esbuildArgs --alias: expected name=path, got ${text}`);
        options.alias[text.slice(0, eq)] = text.slice(eq + 1);
      }
    } else if (flag === '--drop') {
      options.drop = items.map(String) as BuildOptions['drop'];
    } else if (flag === '--pure') {
      options.pure = items.map(String);
    } else if (flag === '--tree-shaking') {
      options.treeShaking = String(value) !== 'false';
    } else if (flag === '--legal-comments') {
      options.legalComments = String(value) as BuildOptions['legalComments'];
    } else {
      throw new Error(`esbuildArgs ${flag}: not mapped in infra/esbuild-options.ts; add it there`);
    }
  }
  return options;
}

/**
 * The esbuild JS API options of NodejsFunction's build of `entry` with `bundling`: the bundle
 * written to `<outdir>/index.mjs` (or `index.js` for CJS), as aws-cdk-lib names it.
 */
export function esbuildOptionsOf(bundling: BundlingOptions, entry: string, outdir: string): BuildOptions {
  for (const [key, value] of Object.entries(bundling)) {
    if (value === undefined || NOT_ESBUILD.has(key) || MAPPED.has(key)) continue;
    throw new Error(`bundling.${key}: not mapped in infra/esbuild-options.ts; add it there`);
  }
  if (bundling.target === undefined) throw new Error('bundling.target: set it (the report knows no runtime)');
  const sourcemap = bundling.sourceMapMode ?? bundling.sourceMap;
  const esm = bundling.format === 'esm';
  return {
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    target: bundling.target,
    ...(bundling.format ? { format: bundling.format as 'esm' | 'cjs' } : {}),
    outfile: `${outdir}/${esm ? 'index.mjs' : 'index.js'}`,
    minify: bundling.minify ?? false,
    // The CLI's bare `--sourcemap` is a linked `.map` file, the JS API's `true`.
    ...(sourcemap ? { sourcemap: sourcemap === true || sourcemap === 'default' ? true : sourcemap } : {}),
    ...(bundling.sourcesContent === false ? { sourcesContent: false } : {}),
    // NodejsFunction's default externals are the runtime's SDK; leaseq sets `[]` (bundled).
    external: bundling.externalModules ?? ['@aws-sdk/*'],
    ...(bundling.loader ? { loader: bundling.loader as BuildOptions['loader'] } : {}),
    ...(bundling.define ? { define: bundling.define } : {}),
    ...(bundling.keepNames ? { keepNames: true } : {}),
    ...(bundling.tsconfig ? { tsconfig: bundling.tsconfig } : {}),
    ...(bundling.banner ? { banner: { js: bundling.banner } } : {}),
    ...(bundling.footer ? { footer: { js: bundling.footer } } : {}),
    ...(bundling.mainFields ? { mainFields: bundling.mainFields } : {}),
    ...(bundling.inject ? { inject: bundling.inject } : {}),
    ...(bundling.esbuildArgs ? esbuildArgsOptions(bundling.esbuildArgs) : {}),
  };
}

/**
 * Runs the `afterBundling` commands of `bundling` for a bundle written to `outputDir`, as
 * aws-cdk-lib's local bundling does (`bash -c`, from the project root): what they add beside the
 * bundle (the S3 client's file, infra/leaseq-function.ts) is part of what deploys.
 */
export function runAfterBundling(bundling: BundlingOptions, projectRoot: string, outputDir: string): void {
  for (const command of bundling.commandHooks?.afterBundling(projectRoot, outputDir) ?? [])
    execFileSync('bash', ['-c', command], { cwd: projectRoot, stdio: ['ignore', 'inherit', 'inherit'] });
}
