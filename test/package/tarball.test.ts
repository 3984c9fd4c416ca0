import { execFile } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The package as a team gets it: `npm pack`, installed from the tarball into a project of its own,
 * then each entry imported with plain node and type-checked with tsc. The client's install is
 * measured before any optional peer is added; the peers for the rest are linked from this
 * repository's node_modules, so only leaseq's own dependencies come from the registry.
 */

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  peerDependencies: Record<string, string>;
};
/** What `npm run build` reads: dist/ is rebuilt when any of it is newer than dist's oldest file. */
const BUILD_INPUTS = [
  'client',
  'functions',
  'infra',
  'cli',
  'console',
  'bench/prices.ts',
  'bench/figures.json',
  'scripts/build-package.mjs',
  'tsconfig.json',
  'tsconfig.build.json',
];

let project: string;
let packed: string[];
let clientInstall: { disk: number; apparent: number };

function files(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).flatMap((name) => files(join(path, name)));
}

function mtimes(paths: string[]): number[] {
  return paths.flatMap((p) => files(join(REPO, p))).map((f) => statSync(f).mtimeMs);
}

function distIsFresh(): boolean {
  try {
    return Math.max(...mtimes(BUILD_INPUTS)) < Math.min(...mtimes(['dist']));
  } catch {
    return false; // no dist/
  }
}

const execFileAsync = promisify(execFile);

/**
 * Runs a command to its end without blocking the test worker (vitest's RPC times out otherwise),
 * with the project's node_modules/.bin first on the PATH, as `npx cdk` and npm scripts have it.
 */
async function run(command: string, args: string[], cwd = project) {
  try {
    const { stdout, stderr } = await execFileAsync(command, args, {
      cwd,
      env: { ...process.env, PATH: `${join(project, 'node_modules/.bin')}:${process.env.PATH}` },
      encoding: 'utf8',
      timeout: 240_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { status: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    return {
      status: typeof e.code === 'number' ? e.code : -1,
      stdout: e.stdout ?? '',
      stderr: e.stderr ?? String(err),
    };
  }
}

async function mustRun(command: string, args: string[], cwd = project): Promise<string> {
  const result = await run(command, args, cwd);
  // tsc reports on stdout, npm on stderr.
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${result.stdout}${result.stderr}`);
  return result.stdout;
}

/** KiB under `dir` on disk and in files' own sizes, as `du` counts them (symlinks not followed). */
async function diskKiB(dir: string): Promise<{ disk: number; apparent: number }> {
  const kib = async (...flags: string[]) =>
    Number((await mustRun('du', ['-sk', ...flags, dir])).split('\t')[0]);
  return { disk: await kib(), apparent: await kib('--apparent-size') };
}

/** Links a package of this repository's node_modules into the project, as if installed there. */
function linkFromRepo(name: string): void {
  const target = join(project, 'node_modules', name);
  mkdirSync(dirname(target), { recursive: true });
  symlinkSync(join(REPO, 'node_modules', name), target, 'dir');
}

beforeAll(async () => {
  project = mkdtempSync(join(tmpdir(), 'leaseq-package-'));
  if (!distIsFresh()) await mustRun('npm', ['run', 'build'], REPO);
  // --ignore-scripts: prepack would build again what was just checked fresh.
  const [tarball] = JSON.parse(
    await mustRun('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', project], REPO),
  ) as { filename: string; files: { path: string }[] }[];
  if (!tarball) throw new Error('npm pack made no tarball');
  packed = tarball.files.map((f) => f.path);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'team-app', private: true, type: 'module' }),
  );
  await mustRun('npm', [
    'install',
    join(project, tarball.filename),
    '--no-audit',
    '--no-fund',
    '--prefer-offline',
  ]);
  clientInstall = await diskKiB(join(project, 'node_modules'));
}, 300_000);

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('the packed leaseq', () => {
  it('ships the built entries and the bin, no sources of the repository’s tests, bench or chaos runs', () => {
    expect(packed).toEqual(
      expect.arrayContaining([
        'package.json',
        'bin/leaseq.mjs',
        'dist/client/index.js',
        'dist/client/index.d.ts',
        'dist/client/testing/index.js',
        'dist/client/testing/index.d.ts',
        'dist/functions/lambda-consumer/index.js',
        'dist/functions/lambda-consumer/index.d.ts',
        'dist/infra/leaseq-tenant.js',
        'dist/infra/leaseq-tenant.d.ts',
        'dist/functions/api/handler.js',
        'dist/cli/main.js',
      ]),
    );
    expect(packed.filter((f) => /^(test|bench|chaos|examples|tenants)\//.test(f))).toEqual([]);
    expect(packed.filter((f) => /\.test\.|(^|\/)test\//.test(f))).toEqual([]);
  });

  it('installs the client and the command line with their own dependencies only: no AWS SDK, zod, Ajv, CDK or emulator', () => {
    const installed = readdirSync(join(project, 'node_modules')).filter((n) => !n.startsWith('.'));
    expect(installed).toEqual(
      expect.arrayContaining(['leaseq', 'ulid', 'ws', 'commander', 'cli-table3', 'cli-progress']),
    );
    expect(
      installed.filter((n) =>
        /^(@aws-sdk|@smithy|@middy|zod|ajv|aws-cdk-lib|constructs|esbuild|dynalite|kinesalite|s3rver)/.test(
          n,
        ),
      ),
    ).toEqual([]);
    console.log(
      `leaseq install: node_modules ${clientInstall.disk} KiB on disk, ${clientInstall.apparent} KiB of files`,
    );
    expect(clientInstall.disk).toBeLessThan(5 * 1024);
  });

  it('runs the command line after a plain install, and names what `leaseq start` needs when it is not installed', async () => {
    const bin = join(project, 'node_modules/leaseq/bin/leaseq.mjs');
    const help = await run(process.execPath, [bin, '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/Usage: leaseq/);
    const size = await run(process.execPath, [bin, 'size', '--rate', '1000', '--bytes', '1024']);
    expect(size.status).toBe(0);
    expect(size.stdout).toMatch(/shards/i);
    const start = await run(process.execPath, [bin, 'start']);
    expect(start.status).toBe(2);
    expect(start.stderr).toMatch(
      /^leaseq start needs zod, ajv, ajv-formats, .*dynalite, kinesalite, s3rver.*: npm install --save-dev /,
    );
  });

  describe('with its optional peers', () => {
    beforeAll(() => {
      for (const name of Object.keys(pkg.peerDependencies)) linkFromRepo(name);
      linkFromRepo('@types/node');
      // NodejsFunction runs the `esbuild` command, which installing esbuild puts in node_modules/.bin.
      mkdirSync(join(project, 'node_modules/.bin'), { recursive: true });
      symlinkSync('../esbuild/bin/esbuild', join(project, 'node_modules/.bin/esbuild'));
      mkdirSync(join(project, 'consumers'));
      writeFileSync(
        join(project, 'consumers/billing.mjs'),
        [
          "import { leaseqConsumer } from 'leaseq/consumer';",
          "export const handler = leaseqConsumer(async () => {}, { queue: 'events' });",
        ].join('\n'),
      );
    });

    it('imports each entry with plain node, checks the consumer modules and synthesizes a team’s stack, bundling every function', async () => {
      writeFileSync(
        join(project, 'app.mjs'),
        `
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { LeaseqTenant } from 'leaseq/cdk';
import { LeaseqClient, Worker } from 'leaseq/client';
import { leaseqConsumer, RetryAfterError } from 'leaseq/consumer';
import { checkRedelivery } from 'leaseq/testing';

const app = new App({ outdir: 'cdk.out' });
const stack = new Stack(app, 'TeamStack');
const props = {
  tenant: {
    tenant: 'orders',
    alarms: { page: ['oncall@example.com'] },
    queues: {
      jobs: { owner: 'orders-team', shards: 1 },
      events: { owner: 'billing-team', shards: 1, consumers: [{ name: 'billing', entry: 'consumers/billing.mjs' }] },
    },
  },
};
await LeaseqTenant.checkConsumers(props);
const orders = new LeaseqTenant(stack, 'Orders', props);
const assembly = app.synth();
const template = assembly.getStackByName('TeamStack').template;
const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
const assets = readdirSync('cdk.out').filter((d) => d.startsWith('asset.'));
const bundles = assets.map((d) => statSync(join('cdk.out', d, 'index.mjs')).size);
// The files loaded on first use, beside each bundle (infra/leaseq-function.ts).
const s3Clients = assets.map((d) => statSync(join('cdk.out', d, 's3-client.js')).size);
const validators = assets.map((d) => statSync(join('cdk.out', d, 'payload-validator.js')).size);
const kmsClients = assets.map((d) => statSync(join('cdk.out', d, 'kms-client.js')).size);
const openApis = assets.map((d) => statSync(join('cdk.out', d, 'openapi.js')).size);
console.log(JSON.stringify({
  client: typeof LeaseqClient, worker: typeof Worker, consumer: typeof leaseqConsumer, testing: typeof checkRedelivery,
  retryAfter: new RetryAfterError(5) instanceof Error, queues: [...orders.queues.keys()],
  functions: functions.length, bundles, s3Clients, validators, kmsClients, openApis,
}));
`,
      );
      // esbuild reports each bundle on stderr; a failure is the exit status.
      const synth = await run(process.execPath, ['app.mjs']);
      expect(synth.status, synth.stderr).toBe(0);
      const out = JSON.parse(synth.stdout.trim().split('\n').at(-1) ?? '{}');
      expect(out).toMatchObject({
        client: 'function',
        worker: 'function',
        consumer: 'function',
        testing: 'function',
        retryAfter: true,
        queues: ['jobs', 'events'],
        // api, dispatch, sweep, the alarm relay, busy-time fan-out's release and the consumer: each
        // bundled from the installed package
        functions: 6,
      });
      expect(out.bundles).toHaveLength(6);
      for (const size of out.bundles) expect(size).toBeGreaterThan(10_000);
      for (const size of [...out.s3Clients, ...out.validators, ...out.kmsClients, ...out.openApis])
        expect(size).toBeGreaterThan(10_000);
    }, 120_000);

    it('type-checks a project using each entry with tsc', async () => {
      // README's tsconfig.json, as a team copies it.
      const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
      const block = /needs\s+`NodeNext` modules[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
      if (!block) throw new Error("README's tsconfig.json block is gone");
      const { compilerOptions } = JSON.parse(block) as { compilerOptions: Record<string, unknown> };
      writeFileSync(
        join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: { ...compilerOptions, noEmit: true, types: ['node'] },
          files: ['check.ts'],
        }),
      );
      writeFileSync(
        join(project, 'check.ts'),
        `
import { App, Stack } from 'aws-cdk-lib';
import { LeaseqTenant, type LeaseqTenantConfig } from 'leaseq/cdk';
import { LeaseqClient, type ProduceMessage, type ReceivedMessage } from 'leaseq/client';
import { type LeaseqMessage, leaseqConsumer } from 'leaseq/consumer';
import { checkRedelivery } from 'leaseq/testing';

const config: LeaseqTenantConfig = { tenant: 'orders', queues: { jobs: { tier: 'ephemeral', shards: 1 } } };
export const tenant = new LeaseqTenant(new Stack(new App(), 'S'), 'Orders', { tenant: config });
const client = new LeaseqClient({ baseUrl: 'http://127.0.0.1:4000', apiKey: 'key' });
const message: ProduceMessage = { payload: { total: 42 } };
export const produced = client.produce('jobs', [message]);
export const handler = leaseqConsumer(async (m: LeaseqMessage) => void m.message_id, { queue: 'jobs' });
// The types are leaseq's, not any: each of these is refused.
// @ts-expect-error a queue setting that does not exist
export const typo: LeaseqTenantConfig = { tenant: 'orders', queues: { jobs: { shardz: 1 } } };
// @ts-expect-error produce takes an array of messages
export const one = client.produce('jobs', message);
// @ts-expect-error the kit needs the payloads to try
export const kit = checkRedelivery({ setup: () => ({ handler: async () => {}, effect: () => 0 }) });
// The client's types are inferred from the wire's schemas (zod's types), and they resolve here.
export const received = (m: ReceivedMessage<{ total: number }>): number => m.payload.total + m.attempt;
// @ts-expect-error a delivery's replay_id is a string
export const replayId = (m: ReceivedMessage): number | undefined => m.replay_id;
`,
      );
      const tsc = await run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', project]);
      expect(tsc.stdout).toBe('');
      expect(tsc.status).toBe(0);
    }, 120_000);
  });
});
