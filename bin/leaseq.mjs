#!/usr/bin/env node
// `npx leaseq` / `leaseq`: runs cli/main.ts through tsx's ESM loader (the repository runs its
// TypeScript directly, with no build step).
import { register } from 'tsx/esm/api';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
register();
await import(new URL('../cli/main.ts', import.meta.url).href);
