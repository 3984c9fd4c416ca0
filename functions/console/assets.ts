import * as z from 'zod/mini';
import '../core/zod-mini.js';

/**
 * The browser console's built files (console/, built by infra/console-assets.ts). On AWS the api
 * bundle carries them (esbuild `define` of BUNDLED_CONSOLE_ASSETS, as the tenant file travels, in
 * console/bundled-assets.ts), so the function reads no file and runs no build; the local runtime
 * builds them itself.
 */
export const consoleAssetsSchema = z.strictObject({
  html: z.string().check(z.minLength(1)),
  js: z.string().check(z.minLength(1)),
  css: z.string().check(z.minLength(1)),
});

export type ConsoleAssets = z.infer<typeof consoleAssetsSchema>;

/** Where the api function gets the assets from, asked when the console is first requested. */
export type ConsoleAssetSource = () => Promise<ConsoleAssets | undefined>;

export const BUNDLED_CONSOLE_ASSETS = '__LEASEQ_CONSOLE_ASSETS__';

/** The assets the bundle carries, loaded from their own file; undefined outside such a bundle. */
export const bundledConsoleAssets: ConsoleAssetSource = async () =>
  (await import('./bundled-assets.js')).bundledAssets();
