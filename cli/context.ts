import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { InvalidArgumentError } from 'commander';
import { LeaseqApiError, LeaseqClient, LeaseqNetworkError } from '../client/index.js';

/** What every command shares: where it connects, with which key, and how it answers. */

export const DEFAULT_URL = 'http://127.0.0.1:4000';

/** The options every command takes (set on the program, read with `optsWithGlobals()`). */
export interface GlobalOptions {
  url?: string;
  key?: string;
  json?: boolean;
  consumer?: string;
}

/** A mistake in how the command was called: exit 2, one line, no stack. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface Context {
  client: LeaseqClient;
  url: string;
  json: boolean;
  /** `?consumer=` for the owner's tools, when given. */
  scope: { consumer?: string };
}

/** The local runtime's admin key file, as `npm start` writes it. */
export function localKeyFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.LEASEQ_DATA_DIR || '.leaseq', 'admin-key');
}

export function resolveConnection(
  options: GlobalOptions,
  env: NodeJS.ProcessEnv = process.env,
): { url: string; key: string } {
  const url = options.url ?? env.LEASEQ_URL ?? DEFAULT_URL;
  let key = options.key ?? env.LEASEQ_KEY;
  if (!key) {
    const file = localKeyFile(env);
    if (existsSync(file)) key = readFileSync(file, 'utf8').trim();
  }
  if (!key) {
    throw new UsageError(
      `no API key: pass --key or set LEASEQ_KEY (the local runtime keeps its admin key in ${localKeyFile(env)})`,
    );
  }
  return { url, key };
}

export function contextOf(options: GlobalOptions): Context {
  const { url, key } = resolveConnection(options);
  // Few retries: a person waits on the answer, and a script gets exit 1 soon.
  const client = new LeaseqClient({ baseUrl: url, apiKey: key, maxRetries: 2, retryBaseMs: 200 });
  return {
    client,
    url,
    json: options.json === true,
    scope: options.consumer !== undefined ? { consumer: options.consumer } : {},
  };
}

/** The exit code and the one stderr line of a failure. */
export function describeFailure(
  err: unknown,
  url?: string,
): { code: number; errorCode: string; message: string } {
  if (err instanceof UsageError) return { code: 2, errorCode: 'USAGE', message: err.message };
  if (err instanceof LeaseqApiError) return { code: 1, errorCode: err.code, message: err.message };
  if (err instanceof LeaseqNetworkError) {
    return { code: 1, errorCode: 'NETWORK', message: `cannot reach ${url ?? 'the service'}: ${err.message}` };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { code: 1, errorCode: 'ERROR', message };
}

/** Prints a failure as one line on stderr (JSON with `--json`) and answers the exit code. */
export function reportFailure(err: unknown, json: boolean, url?: string): number {
  const f = describeFailure(err, url);
  const oneLine = f.message.replace(/\s*\n\s*/g, ' ');
  if (json) process.stderr.write(`${JSON.stringify({ error: { code: f.errorCode, message: oneLine } })}\n`);
  else if (f.errorCode === 'USAGE' || f.errorCode === 'NETWORK' || f.errorCode === 'ERROR')
    process.stderr.write(`leaseq: ${oneLine}\n`);
  else process.stderr.write(`leaseq: ${f.errorCode}: ${oneLine}\n`);
  if (process.env.LEASEQ_DEBUG && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  return f.code;
}

/** Commander's parser for positive integers. */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number of at least 1');
  return n;
}

export function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a number above 0');
  return n;
}

export function nonNegativeNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a number of at least 0');
  return n;
}

/** Repeatable or comma-separated option values: `--ids a,b --ids c`. */
export function collect(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean),
  ];
}

export function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${where}: not valid JSON: ${(err as Error).message}`);
  }
}

/** Asks a yes/no question on the terminal; false when there is no terminal to ask on. */
export async function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) return false;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await new Promise<string>((resolve) => rl.question(`${question} [y/N] `, resolve));
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/** The client's: resolves after `ms` or at once on abort, and leaves no listener behind on the signal. */
export { sleep } from '../client/retry.js';
