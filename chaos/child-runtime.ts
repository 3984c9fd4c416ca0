import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Random } from './random.js';

/**
 * The local runtime as a child process, exactly as `npm start` runs it, so it can be killed
 * with SIGKILL (no shutdown code runs, buffers are lost) and started again on the same data
 * folder and port. Its output goes to a log file in the run's folder.
 */

export interface ChildRuntimeOptions {
  repoRoot: string;
  tenantFile: string;
  dataDir: string;
  port: number;
  adminKey: string;
  logFile: string;
  /** More environment for the runtime's process. */
  env?: Record<string, string>;
}

const READY_LINE = 'is running';
/** The banner's line naming this start's emulator endpoints (infra/local/main.ts). */
const EMULATORS_LINE = /^emulators: +Kinesis (\S+), DynamoDB (\S+), S3 (\S+)$/m;

export interface EmulatorEndpoints {
  kinesis: string;
  dynamodb: string;
  s3: string;
}

export class ChildRuntime {
  readonly url: string;
  /** Exits nobody asked for: a crash of the runtime itself. */
  readonly unexpectedExits: string[] = [];
  private child: ChildProcess | undefined;
  private readonly log: WriteStream;
  private killing = false;
  private serving: EmulatorEndpoints | undefined;
  private output = '';
  /** Sees the start-up output as it grows (startAndKill). */
  private watch: ((output: string) => void) | undefined;

  constructor(private readonly o: ChildRuntimeOptions) {
    this.url = `http://127.0.0.1:${o.port}`;
    this.log = createWriteStream(o.logFile, { flags: 'a' });
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * The emulators of the process that serves now (they live in it, on ports it picks at each
   * start), or undefined while none does.
   */
  get endpoints(): EmulatorEndpoints | undefined {
    return this.running ? this.serving : undefined;
  }

  /** What the latest start printed until it served (or died): its start-up lines and banner. */
  get startOutput(): string {
    return this.output;
  }

  /** Starts it and resolves once it serves; rejects with its last output if it exits first. */
  async start(timeoutMs = 60_000): Promise<void> {
    this.log.write(`\n--- start ${new Date().toISOString()}\n`);
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'infra/local/main.ts',
        '--config',
        this.o.tenantFile,
        '--port',
        String(this.o.port),
        '--data-dir',
        this.o.dataDir,
      ],
      {
        cwd: this.o.repoRoot,
        env: {
          ...process.env,
          LEASEQ_ADMIN_KEY: this.o.adminKey,
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
          ...this.o.env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    this.child = child;
    this.killing = false;
    this.serving = undefined;
    this.output = '';
    child.stderr?.pipe(this.log, { end: false });
    let output = '';
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no "${READY_LINE}" after ${timeoutMs} ms`)),
        timeoutMs,
      );
      child.stdout?.on('data', (chunk: Buffer) => {
        this.log.write(chunk);
        if (output.includes(READY_LINE) && EMULATORS_LINE.test(output)) return;
        output += chunk.toString();
        this.output = output;
        this.watch?.(output);
        // The banner is one write, but a pipe may split it: ready once its emulators line is in too.
        const emulators = EMULATORS_LINE.exec(output);
        if (output.includes(READY_LINE) && emulators) {
          const [, kinesis, dynamodb, s3] = emulators as unknown as [string, string, string, string];
          this.serving = { kinesis, dynamodb, s3 };
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(
          new Error(`the runtime exited (${signal ?? code}) before it was running:\n${output.slice(-2000)}`),
        );
      });
    });
    child.once('exit', (code, signal) => {
      if (!this.killing && output.includes(READY_LINE))
        this.unexpectedExits.push(`${new Date().toISOString()} exit ${signal ?? code}`);
    });
    try {
      await ready;
    } catch (err) {
      await this.kill();
      throw err;
    }
  }

  /**
   * Starts it and SIGKILLs it once its start-up output matches `at` (or `maxMs` after the start),
   * serving or not: a kill in the middle of what a start does. Answers whether it served first.
   */
  async startAndKill(at: RegExp, maxMs: number): Promise<boolean> {
    const seen = new Promise<void>((resolve) => {
      this.watch = (output) => {
        if (at.test(output)) resolve();
      };
    });
    const started = this.start().then(
      () => true,
      () => false,
    );
    await Promise.race([seen, sleep(maxMs)]);
    this.watch = undefined;
    const served = this.endpoints !== undefined;
    await this.kill();
    await started;
    return served;
  }

  /** SIGKILL: the process dies where it stands. Resolves once it is gone. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  /**
   * SIGTERM (the runtime closes its servers), and SIGKILL if it is still there after 10 s: a
   * user's Ctrl-C. It can be started again.
   */
  async terminate(): Promise<void> {
    await this.signal('SIGTERM', 10_000);
  }

  /** Terminates it for good: its log is closed. */
  async stop(): Promise<void> {
    await this.terminate();
    if (!this.log.writableEnded) this.log.end();
  }

  /** Resolves on `close`, once its output is flushed to the log too. */
  private async signal(signal: NodeJS.Signals, killAfterMs?: number): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const closed = once(child, 'close');
    this.killing = true;
    child.kill(signal);
    const timer =
      killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    await closed;
    clearTimeout(timer);
  }
}

/**
 * A free port outside the kernel's ephemeral range (32768 and up), so no other socket takes it
 * while the runtime is down between a kill and its restart.
 */
export async function pickPort(random: Random): Promise<number> {
  for (;;) {
    const port = random.int(20_000, 30_000);
    const server = createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (free) {
      await new Promise((resolve) => server.close(resolve));
      return port;
    }
  }
}
