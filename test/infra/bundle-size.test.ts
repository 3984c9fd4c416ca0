import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildSync } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUNDLES, type BuiltBundle, buildBundle, inputsMatching, KB, REPO } from '../../bench/bundles.js';
import { esbuildOptionsOf, runAfterBundling } from '../../infra/esbuild-options.js';
import { leaseqBundling } from '../../infra/leaseq-function.js';

/**
 * The Lambda bundles, built with the stack's own esbuild options (infra/leaseq-function.ts
 * `leaseqFunctionBundling`; byte for byte what `cdk synth` stages), stay lean. Sizes only: init
 * times are the bundle report's (`npm run bundle-report`), since timings on a shared machine
 * belong to benchmarks.
 *
 * The goal is ≤ 300 KB per function (docs/packaging.md), and every bundle is held to it. DynamoDB
 * and Kinesis are called through the SDK's signer, HTTP handler and retry strategy without its
 * generated clients (functions/aws/aws-json.ts), the S3 and KMS clients are in files of their own
 * beside the bundle, loaded on first use, and zod/mini is ~35 KB: what would make them grow again
 * (classic zod, zod's 40 locales, a generated client, the console's assets) fails here, by name.
 */

/** Minified bytes each bundle must stay under: the goal. */
const CEILING: Record<string, number> = {
  api: 300 * KB,
  dispatch: 300 * KB,
  sweep: 300 * KB,
  // SNS's client is a file beside it, loaded at the first alarm.
  'alarm-relay': 100 * KB,
  // Kinesis' consumer calls and Lambda's mapping calls, signed by hand.
  'fan-out-release': 100 * KB,
  consumer: 300 * KB,
};

const built = new Map<string, BuiltBundle>();

beforeAll(async () => {
  // One at a time: other suites share this machine's two cores.
  for (const spec of BUNDLES) built.set(spec.name, await buildBundle(spec));
}, 60_000);

describe.each(BUNDLES.map((spec) => spec.name))('the %s bundle', (name) => {
  const bundle = () => {
    const b = built.get(name);
    if (!b) throw new Error(`${name} was not built`);
    return b;
  };

  it('is under its ceiling', () => {
    const ceiling = CEILING[name];
    expect(ceiling, `no ceiling for ${name}`).toBeDefined();
    expect(bundle().bytes, `${name}: ${(bundle().bytes / KB).toFixed(1)} KB`).toBeLessThanOrEqual(
      ceiling ?? 0,
    );
  });

  it('imports zod as a namespace in every module of its own (import * as z), which lets esbuild shake zod', () => {
    // `import { z } from 'zod'` hands esbuild zod's whole namespace object, its 40 locales included.
    const named = Object.keys(bundle().metafile.inputs).filter(
      (path) =>
        !path.includes('node_modules/') &&
        /\.[cm]?[jt]s$/.test(path) &&
        /^import\s*\{[^}]*\bz\b[^}]*\}\s*from\s*['"]zod(\/mini)?['"]/m.test(
          readFileSync(join(REPO, path), 'utf8'),
        ),
    );
    expect(named, "change these to `import * as z from 'zod/mini'`").toEqual([]);
  });

  it('builds its schemas with zod/mini: classic zod, which builds them several times slower at init, is not in it', () => {
    const classic = inputsMatching(bundle().metafile, /node_modules\/zod\/v4\/classic\//);
    expect(classic.map((c) => c.path)).toEqual([]);
  });

  it('carries none of zod’s locales but English', () => {
    // English is the one file core/zod-mini.ts installs (zod/mini has no messages of its own).
    const locales = inputsMatching(bundle().metafile, /node_modules\/zod\/.*locales\/(?!en\.js$)/);
    expect(locales.map((l) => l.path)).toEqual([]);
  });

  it('leaves the S3 client, the KMS client, Ajv, the OpenAPI generator, the usage, the trace and the console to the files beside it, loaded on first use', () => {
    const lazy = inputsMatching(
      bundle().metafile,
      /node_modules\/(@aws-sdk\/client-s3|@aws-sdk\/client-kms|ajv|ajv-formats)\/|zod\/v4\/core\/(to-json-schema|json-schema-processors)\.js$|functions\/api\/openapi\.ts$|functions\/console\/bundled-assets\.ts$|functions\/operations\/(usage-report|trace)\.ts$|functions\/core\/usage\.ts$/,
    );
    expect(lazy.map((k) => k.path)).toEqual([]);
  });

  // The relay makes no call of its own: SNS's client, and the credentials with it, are beside it.
  const calls = name !== 'alarm-relay';

  it(`calls DynamoDB and Kinesis ${calls ? '' : '(here, nothing) '}without the generated clients (their schemas, endpoint rules and event streams)`, () => {
    const generated = inputsMatching(
      bundle().metafile,
      /node_modules\/@aws-sdk\/(client-dynamodb|client-kinesis|client-sns|lib-dynamodb|dynamodb-codec)\/|@smithy\/core\/dist-es\/submodules\/(event-streams|endpoints|schema)\//,
    );
    expect(generated.map((g) => g.path)).toEqual([]);
    expect(inputsMatching(bundle().metafile, /functions\/aws\/aws-json\.ts$/)).toHaveLength(calls ? 1 : 0);
  });

  it('carries the environment credentials in place of the SDK default chain (SSO, profiles, STS…)', () => {
    const chain = inputsMatching(
      bundle().metafile,
      /node_modules\/@aws-sdk\/(credential-provider-(node|sso|ini|web-identity|process|http)|nested-clients)\//,
    );
    expect(chain.map((c) => c.path)).toEqual([]);
    expect(inputsMatching(bundle().metafile, /functions\/aws\/lambda-credentials\.ts$/)).toHaveLength(
      calls ? 1 : 0,
    );
  });
});

/**
 * Builds `fixture` as the stack bundles a function, with the files its hook puts beside the
 * bundle, and answers what its handler returns, run by plain node with `env`.
 */
function runBundled(fixture: string, env: Record<string, string> = {}): unknown {
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-probe-'));
  try {
    buildSync({
      ...esbuildOptionsOf(leaseqBundling(), fixture, dir),
      absWorkingDir: REPO,
      logLevel: 'error',
    });
    runAfterBundling(leaseqBundling(), REPO, dir);
    const probe = pathToFileURL(join(dir, 'index.mjs')).href;
    const run = `const { handler } = await import(${JSON.stringify(probe)}); console.log(JSON.stringify(await handler()));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '--eval', run], {
      env: { PATH: process.env.PATH ?? '', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...env },
      encoding: 'utf8',
    });
    return JSON.parse(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The role credentials Lambda puts in a function's environment. */
const ROLE_ENV = {
  AWS_ACCESS_KEY_ID: 'ASIAROLE',
  AWS_SECRET_ACCESS_KEY: 'role-secret',
  AWS_SESSION_TOKEN: 'role-token',
};

describe('the credentials of a bundled function', () => {
  it('are the role credentials Lambda puts in its environment (the S3 client through its own file)', () => {
    expect(runBundled('test/fixtures/credentials-probe.ts', ROLE_ENV)).toEqual(
      Array(3).fill('ASIAROLE/role-secret/role-token'),
    );
  });
});

describe('the KMS calls of a bundled function', () => {
  it('load the client from its own file and sign with the role credentials', () => {
    expect(runBundled('test/fixtures/kms-probe.ts', ROLE_ENV)).toEqual({
      calls: ['TrentService.Encrypt ASIAROLE role-token'],
      ciphertext: 'sealed:plain',
    });
  });
});

describe('the OpenAPI document of the bundled api', () => {
  it('is generated by its own file on the first GET /openapi.json, the same as docs/openapi.json', () => {
    const docs = JSON.parse(readFileSync(join(REPO, 'docs/openapi.json'), 'utf8'));
    expect(runBundled('test/fixtures/openapi-probe.ts')).toEqual({ status: 200, body: docs });
  });
});

describe('the DLQ grouped by error of the bundled api', () => {
  it('reads and groups from its own file on the first ask', () => {
    expect(runBundled('test/fixtures/dead-letter-errors-probe.ts')).toEqual({
      groups: [
        {
          error: 'timed out',
          count: 2,
          first_dead_at: '2025-12-31T23:59:59.000Z',
          last_dead_at: '2025-12-31T23:59:59.000Z',
          sample_message_id: expect.any(String),
        },
      ],
      grouped: 2,
      truncated: false,
    });
  });
});

describe('the usage of the bundled api', () => {
  it('is computed by its own file on the first ask', () => {
    expect(runBundled('test/fixtures/usage-probe.ts')).toEqual({
      produced: { messages: 10, bytes: 1000 },
      requests: 10,
    });
  });
});

describe('the message trace of the bundled api', () => {
  it('reads from its own file on the first ask, and its 404 is one the api knows', () => {
    expect(runBundled('test/fixtures/trace-probe.ts')).toEqual({
      code: 'MESSAGE_NOT_FOUND',
      known: true,
      status: 404,
    });
  });
});

describe('the payload schema check of a bundled function', () => {
  it('loads the validator from its own file and answers as in source', () => {
    expect(runBundled('test/fixtures/payload-probe.ts')).toEqual(['payload/n must be number', null]);
  });
});
