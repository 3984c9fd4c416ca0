import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { UsageError } from '../context.js';

/**
 * `leaseq start`: what `npm start` does (infra/local/main.ts, same flags), in a child process.
 * Flags are checked here first, and so is the tenant file, so a mistake in either is one line
 * (with the file's line and column for broken JSON) and exit 2, never a stack trace.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The runtime's TypeScript through tsx in the repository; its compiled JavaScript in the package (dist/). */
const MAIN = existsSync(join(ROOT, 'infra/local/main.ts'))
  ? ['--import', 'tsx', join(ROOT, 'infra/local/main.ts')]
  : [join(ROOT, 'infra/local/main.js')];

export function registerStart(program: Command): void {
  program
    .command('start')
    .description('run the whole system locally (what `npm start` does)')
    .option('--config <file>', 'the tenant file (default $LEASEQ_CONFIG or tenants/local.json)')
    .option('--port <port>', 'the port (default $PORT or 4000)')
    .option('--data-dir <dir>', 'the data folder (default $LEASEQ_DATA_DIR or .leaseq)')
    .option('--strict', "refuse a tenant file below its queues' tier standards, as synth does")
    .action(async (opts: { config?: string; port?: string; dataDir?: string; strict?: boolean }) => {
      if (opts.port !== undefined && !/^\d+$/.test(opts.port))
        throw new UsageError(`--port: not a port number: ${opts.port}`);
      await checkTenantFile(opts.config ?? process.env.LEASEQ_CONFIG ?? 'tenants/local.json');
      const args = [
        ...(opts.config !== undefined ? ['--config', opts.config] : []),
        ...(opts.port !== undefined ? ['--port', opts.port] : []),
        ...(opts.dataDir !== undefined ? ['--data-dir', opts.dataDir] : []),
        ...(opts.strict ? ['--strict'] : []),
      ];
      const child = spawn(process.execPath, [...MAIN, ...args], {
        stdio: 'inherit',
        env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...process.env },
      });
      // Ctrl-C reaches the child from the terminal; a signal sent to this process alone is passed on.
      for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
      const code = await new Promise<number>((done) => child.on('exit', (c, s) => done(c ?? (s ? 1 : 0))));
      process.exitCode = code;
    });
}

/**
 * The checks `npm start` makes on the tenant file, as a UsageError naming the file (and line).
 * Loaded here, not with the command line: the schemas' libraries (zod, Ajv) are `start`'s to
 * need, with the local runtime's, and the other commands run without them.
 */
async function checkTenantFile(path: string): Promise<void> {
  const [{ ConfigError }, { readTenant }] = await Promise.all([
    import('../../functions/core/config.js'),
    import('../../infra/tenant-file.js'),
  ]);
  try {
    readTenant(resolve(path), path);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
}
