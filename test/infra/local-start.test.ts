import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockDataDir } from '../../infra/local/startup-checks.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * `npm start`'s mistakes, as a newcomer makes them: each is one line with its fix and exit 2, never
 * a stack trace or a silent exit. The runtime's entry runs as `npm start` runs it (tsx).
 */

const MAIN = resolve('infra/local/main.ts');
const scratch = mkdtempSync(join(tmpdir(), 'leaseq-start-'));

let t: TestRuntime;
let busy: Server;
let busyPort: number;

beforeAll(async () => {
  t = await startTestRuntime({ tenant: 'start', queues: { jobs: {} } });
  busy = createServer();
  await new Promise<void>((done) => busy.listen(0, '127.0.0.1', done));
  busyPort = (busy.address() as { port: number }).port;
});
afterAll(async () => {
  busy?.close();
  await t?.close();
});

/** `npm start -- <args>`: its stderr and exit code. */
function start(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', fail);
    child.on('close', (code) => done({ code, stderr }));
  });
}

const oneLine = (stderr: string) => {
  expect(stderr.split('\n').filter(Boolean)).toHaveLength(1);
  expect(stderr).not.toMatch(/\n\s+at /);
};

describe('npm start refuses in one line', { timeout: 60_000 }, () => {
  it('an unknown flag, naming the one it is near', async () => {
    const run = await start(['--prot', '4200']);
    expect(run.code).toBe(2);
    oneLine(run.stderr);
    expect(run.stderr).toContain("unknown option '--prot' (did you mean --port?)");
  });

  it('a port in use, with --port', async () => {
    const run = await start(['--port', String(busyPort), '--data-dir', join(scratch, 'port')]);
    expect(run.code).toBe(2);
    oneLine(run.stderr);
    expect(run.stderr).toContain(`port ${busyPort} is in use: pass --port`);
  });

  it('a data folder another runtime holds, with its pid', async () => {
    const run = await start(['--port', '0', '--data-dir', t.dataDir]);
    expect(run.code).toBe(2);
    oneLine(run.stderr);
    expect(run.stderr).toContain(`the data folder ${t.dataDir} is in use by process ${process.pid}`);
    // The runtime that holds it still serves.
    expect((await t.api('/queues/jobs/stats')).status).toBe(200);
  });

  it('a broken tenant file, with its line and column', async () => {
    const broken = join(scratch, 'broken.json');
    writeFileSync(broken, '{\n  "tenant": "x",\n  "queues": {,}\n}\n');
    const run = await start(['--config', broken]);
    expect(run.code).toBe(2);
    oneLine(run.stderr);
    expect(run.stderr).toContain(`${broken}:3:`);
  });
});

describe("npm start and the queues' tiers", { timeout: 60_000 }, () => {
  const unowned = join(scratch, 'unowned.json');
  const finding =
    'queues.jobs.owner: a standard queue names the team that owns it and its dead letters (fix: add "owner": "<team>", or "tier": "ephemeral" if losing its messages is acceptable)';

  it('warns of what synth would refuse, one line each, and goes on', async () => {
    writeFileSync(
      unowned,
      JSON.stringify({ tenant: 'x', queues: { jobs: {} }, alarms: { page: ['a@example.com'] } }),
    );
    // The busy port stops it right after the warnings: it went on past them.
    const run = await start([
      '--config',
      unowned,
      '--port',
      String(busyPort),
      '--data-dir',
      join(scratch, 'warn'),
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n').filter(Boolean)).toEqual([
      `leaseq: warning: ${finding}`,
      expect.stringContaining(`port ${busyPort} is in use`),
    ]);
  });

  it('refuses them with --strict, as synth does', async () => {
    const run = await start(['--config', unowned, '--strict', '--port', String(busyPort)]);
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n').filter(Boolean)).toEqual([
      `leaseq: ${unowned} is below its queues' tier standards:`,
      `  ${finding}`,
    ]);
  });
});

describe('the data folder lock', () => {
  it('takes over a lock whose process is gone, and its release removes it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-lock-'));
    const gone = spawnSync(process.execPath, [
      '-e',
      'process.stdout.write(String(process.pid))',
    ]).stdout.toString();
    writeFileSync(join(dir, 'leaseq.pid'), gone);
    const release = lockDataDir(dir);
    expect(readFileSync(join(dir, 'leaseq.pid'), 'utf8')).toBe(String(process.pid));
    release();
    expect(existsSync(join(dir, 'leaseq.pid'))).toBe(false);
  });
});
