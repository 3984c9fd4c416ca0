#!/usr/bin/env node
// `npx leaseq` / `leaseq`: in this repository, cli/main.ts through tsx's ESM loader (the repository
// runs its TypeScript directly); from the installed package, the compiled dist/cli/main.js. Its own
// libraries are dependencies; `leaseq start` also needs the local runtime's packages, optional
// peers of leaseq: it names those missing instead of failing on an import.
import { existsSync } from 'node:fs';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** What `leaseq start` (the tenant file's schemas, the local runtime and its emulators) needs. */
const LOCAL_RUNTIME = [
  'zod',
  'ajv',
  'ajv-formats',
  '@aws-lambda-powertools/logger',
  '@aws-lambda-powertools/metrics',
  '@aws-sdk/client-dynamodb',
  '@aws-sdk/client-kinesis',
  '@aws-sdk/client-kms',
  '@aws-sdk/client-s3',
  '@aws-sdk/credential-provider-node',
  '@aws-sdk/util-dynamodb',
  '@middy/core',
  '@middy/http-router',
  '@smithy/core',
  '@smithy/node-http-handler',
  '@smithy/signature-v4',
  'dynalite',
  'kinesalite',
  's3rver',
  'esbuild',
];

function installed(name) {
  try {
    import.meta.resolve(name);
    return true;
  } catch {
    return false;
  }
}

const source = new URL('../cli/main.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  const start = process.argv[2] === 'start';
  const missing = start ? LOCAL_RUNTIME.filter((name) => !installed(name)) : [];
  if (missing.length > 0) {
    console.error(`leaseq start needs ${missing.join(', ')}: npm install --save-dev ${missing.join(' ')}`);
    process.exit(2);
  }
  await import(new URL('../dist/cli/main.js', import.meta.url).href);
}
