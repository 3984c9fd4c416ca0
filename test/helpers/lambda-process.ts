import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import type { HostAnswer, HostRequest } from '../bundles/lambda-host.js';

/**
 * Lambda instances for tests: each a child process of its own (its own environment, nothing of
 * the test process loaded in it) that runs test/bundles/lambda-host.ts with
 * test/bundles/aws-at-moto.ts preloaded, and invokes the handlers of the modules it is given.
 */

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export interface HostFiles {
  host: string;
  preload: string;
  /** Each test module asked for, by its source path, as built into the folder. */
  modules: Record<string, string>;
}

/**
 * Builds the host, the preload and test modules that run beside the bundles (TypeScript, so
 * bundled by esbuild: the child runs plain Node, as Lambda does) into `dir`.
 */
export async function buildHostFiles(dir: string, modules: string[] = []): Promise<HostFiles> {
  const entries = {
    'lambda-host': here('../bundles/lambda-host.ts'),
    'aws-at-moto': here('../bundles/aws-at-moto.ts'),
    ...Object.fromEntries(modules.map((m, i) => [`module-${i}`, m])),
  };
  await build({
    entryPoints: entries,
    outdir: dir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    mainFields: ['module', 'main'],
    // esbuild's ESM output has no `require`; the CommonJS packages bundled need one.
    banner: { js: "import { createRequire } from 'module';const require = createRequire(import.meta.url);" },
    logLevel: 'error',
  });
  return {
    host: join(dir, 'lambda-host.mjs'),
    preload: join(dir, 'aws-at-moto.mjs'),
    modules: Object.fromEntries(modules.map((m, i) => [m, join(dir, `module-${i}.mjs`)])),
  };
}

/** A request of the union without its id (Omit alone would merge the union's members). */
type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;

export class LambdaProcess {
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private nextId = 1;
  private log = '';

  /** `env` is the whole environment: nothing of the test process's is passed on. */
  constructor(
    readonly name: string,
    files: HostFiles,
    env: Record<string, string>,
  ) {
    this.child = fork(files.host, [], {
      execArgv: ['--import', pathToFileURL(files.preload).href],
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    const keep = (chunk: Buffer) => {
      this.log = (this.log + chunk.toString()).slice(-20_000);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    this.child.on('message', (answer: HostAnswer) => {
      const waiting = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      if (answer.ok) waiting?.resolve(answer.value);
      else
        waiting?.reject(
          Object.assign(new Error(`${this.name}: ${answer.error.message}\n${answer.error.stack ?? ''}`), {
            name: answer.error.name,
          }),
        );
    });
    this.child.on('exit', (code, signal) => {
      for (const waiting of this.pending.values())
        waiting.reject(new Error(`${this.name} exited (${signal ?? code})\n${this.output()}`));
      this.pending.clear();
    });
  }

  /** Invokes `module`'s `handler` with `event` and a context of `timeoutMs` left, as Lambda does. */
  invoke<T = unknown>(module: string, event: unknown, timeoutMs: number, handler = 'handler'): Promise<T> {
    return this.request({ kind: 'invoke', module, handler, event, functionName: this.name, timeoutMs });
  }

  /** Calls a function a test module exports, in this process. */
  call<T = unknown>(module: string, name: string, ...args: unknown[]): Promise<T> {
    return this.request({ kind: 'call', module, export: name, args });
  }

  /** A copy of what a module exports under `name` (e.g. what a fixture recorded). */
  value<T = unknown>(module: string, name: string): Promise<T> {
    return this.request({ kind: 'value', module, export: name });
  }

  /** The names of AWS this process connected to. */
  awsHosts(): Promise<string[]> {
    return this.request({ kind: 'hosts' });
  }

  /** What the process wrote (its logs), the last 20,000 characters. */
  output(): string {
    return this.log;
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill();
    await exited;
  }

  private request<T>(request: WithoutId<HostRequest>): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ ...request, id } as HostRequest);
    });
  }
}
