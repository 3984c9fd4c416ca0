import type { RuntimeConfig } from '../core/runtime-config.js';
import type { SecretBox } from './secret-box.js';

/**
 * The secret box of a config with secrets, its file loaded at the first seal or open: only SQS
 * credentials use it, so the api's bundle leaves the sealing code out (docs/packaging.md).
 */
export function lazySecretBox(
  config: Pick<RuntimeConfig, 'secrets' | 'region' | 'tenant'>,
): SecretBox | undefined {
  if (!config.secrets) return undefined;
  let loaded: Promise<SecretBox> | undefined;
  const box = () => {
    loaded ??= import('./secret-box.js').then((module) => module.secretBoxFor(config) as SecretBox);
    loaded.catch(() => {
      loaded = undefined;
    });
    return loaded;
  };
  return {
    seal: async (plain) => (await box()).seal(plain),
    open: async (sealed) => (await box()).open(sealed),
  };
}
