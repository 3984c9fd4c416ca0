import type { HttpResponse } from '../api/http.js';
import type { Route } from '../api/route.js';
import { NotFoundError } from '../core/errors.js';
import type { ConsoleAssetSource, ConsoleAssets } from './assets.js';

/**
 * The console's page and its two assets, public (the page asks for a key, and every call it makes
 * is an API call under that key). They are not JSON API routes, so they stay out of the OpenAPI
 * document and its route list, as the SQS endpoint does.
 */

/** Only this origin's own script, style and API: no inline script, no other host. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const FILES: readonly { path: string; asset: keyof ConsoleAssets; type: string }[] = [
  { path: '/console', asset: 'html', type: 'text/html; charset=utf-8' },
  { path: '/console/app.js', asset: 'js', type: 'text/javascript; charset=utf-8' },
  { path: '/console/app.css', asset: 'css', type: 'text/css; charset=utf-8' },
];

export function consoleRoutes(source: ConsoleAssetSource): Route[] {
  let loaded: Promise<ConsoleAssets | undefined> | undefined;
  const assets = () => {
    loaded ??= source();
    // A failed build (local runtime) is tried again on the next request, not remembered.
    loaded.catch(() => {
      loaded = undefined;
    });
    return loaded;
  };
  return FILES.map(({ path, asset, type }) => ({
    method: 'GET',
    path,
    handler: async (): Promise<HttpResponse> => {
      const files = await assets();
      if (!files) throw new NotFoundError('this build of the api carries no console');
      return {
        statusCode: 200,
        headers: {
          'content-type': type,
          'content-security-policy': CONSOLE_CSP,
          'x-content-type-options': 'nosniff',
          'referrer-policy': 'no-referrer',
          // Small files, asked again each load: a deploy shows at once.
          'cache-control': 'no-cache',
        },
        body: files[asset],
      };
    },
  }));
}
