import { type ConsoleAssets, consoleAssetsSchema } from './assets.js';

/**
 * The assets an api bundle carries (esbuild `define` of BUNDLED_CONSOLE_ASSETS), in a module the
 * bundle loads on the console's first request (infra/leaseq-function.ts, LAZY_MODULES): 28 KB an
 * instance that serves no browser does not parse at init.
 */
declare const __LEASEQ_CONSOLE_ASSETS__: unknown;

/** Undefined outside a bundle built with them (tests, the local runtime). */
export function bundledAssets(): ConsoleAssets | undefined {
  return typeof __LEASEQ_CONSOLE_ASSETS__ === 'undefined'
    ? undefined
    : consoleAssetsSchema.parse(__LEASEQ_CONSOLE_ASSETS__);
}
