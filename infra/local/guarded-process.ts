import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';

/**
 * An emulator of another language (DynamoDB Local's Java, moto's Python) run under a `sh` guard
 * that reads the guard's stdin, a pipe from this process: when this process ends in any way
 * (close(), a crash, SIGKILL) the pipe closes and the guard stops the emulator, so none outlives
 * the runtime or test that started it.
 */

const GUARD = [
  'exec 3<&0', // a background job's stdin is /dev/null; keep the pipe on fd 3
  '"$@" </dev/null & child=$!',
  '{ cat <&3 >/dev/null; kill "$child" 2>/dev/null; } &',
  'wait "$child"',
].join('\n');

/** Runs `command args…` under the guard; its stdout is ignored, its stderr piped. */
export function spawnGuarded(
  name: string,
  command: string,
  args: string[],
  options: Pick<SpawnOptions, 'cwd' | 'env'> = {},
): ChildProcess {
  return spawn('sh', ['-c', GUARD, name, command, ...args], {
    ...options,
    stdio: ['pipe', 'ignore', 'pipe'],
  });
}

/** Closing the guard's stdin stops the emulator; resolves once it has exited. */
export async function stopGuarded(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.stdin?.end();
  await exited;
}

/** A port free when picked (not when the emulator binds it: another process may take it between). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
