import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import {
  BUNDLED_CONSOLE_ASSETS,
  type ConsoleAssetSource,
  type ConsoleAssets,
} from '../functions/console/assets.js';

/**
 * Builds the browser console (console/) into the three strings the api serves: esbuild bundles and
 * minifies its TypeScript and CSS in memory, so nothing is written and nothing built is committed.
 * The stack bundles the result into the api function (consoleAssetsDefine); the local runtime
 * builds it when the console is first asked for (localConsoleAssets).
 */

const CONSOLE_DIR = new URL('../console/', import.meta.url);
const source = (file: string) => fileURLToPath(new URL(file, CONSOLE_DIR));

export function buildConsoleAssets(): ConsoleAssets {
  const { outputFiles } = buildSync({
    entryPoints: [source('app.ts'), source('style.css')],
    outdir: 'out',
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    // Browsers of the last two years: no transform of the modern syntax the console is written in.
    target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
    write: false,
    logLevel: 'silent',
  });
  const output = (ext: string) => {
    const file = outputFiles.find((f) => f.path.endsWith(ext));
    if (!file) throw new Error(`the console's build made no ${ext} file`);
    return file.text;
  };
  return { html: readFileSync(source('index.html'), 'utf8'), js: output('.js'), css: output('.css') };
}

/** The local runtime's source: built at the first request, so runtimes nobody browses pay nothing. */
export const localConsoleAssets: ConsoleAssetSource = async () => buildConsoleAssets();

/**
 * Linux's cap on one command-line argument (MAX_ARG_STRLEN): CDK hands each define to esbuild as
 * one `--define:KEY=VALUE` argument, so a bigger console would fail the bundling, not this check.
 */
export const MAX_DEFINE_BYTES = 128 * 1024;

/** esbuild's `define` that bundles the assets: the identifier becomes an object literal. */
export function consoleAssetsDefine(assets: ConsoleAssets): Record<string, string> {
  const value = JSON.stringify(assets);
  const bytes = Buffer.byteLength(`--define:${BUNDLED_CONSOLE_ASSETS}=${value}`);
  if (bytes > MAX_DEFINE_BYTES)
    throw new Error(
      `the console's assets are ${bytes} bytes as a define; esbuild's command line takes ${MAX_DEFINE_BYTES}`,
    );
  return { [BUNDLED_CONSOLE_ASSETS]: value };
}
