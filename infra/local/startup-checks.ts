import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/**
 * What the local runtime checks before it starts anything, so each mistake a newcomer makes is
 * one line with its fix (exit 2), not a stack trace or a silent exit: an unknown flag, a port in
 * use, a data folder another runtime holds.
 */

export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** `--prot` → `--port`: the known option nearest an unknown one, when it is near. */
export function nearestOption(unknown: string, known: readonly string[]): string | undefined {
  const scored = known.map((k) => ({ k, d: editDistance(unknown, k) })).sort((a, b) => a.d - b.d);
  const best = scored[0];
  return best && best.d <= Math.max(2, Math.floor(best.k.length / 3)) ? best.k : undefined;
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(
        (row[j] ?? 0) + 1,
        (next[j - 1] ?? 0) + 1,
        (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    row = next;
  }
  return row[b.length] ?? 0;
}

/** Fails when something already listens on `port` of 127.0.0.1 (0 asks for any free port). */
export async function checkPortFree(port: number): Promise<void> {
  if (port === 0) return;
  const server = createServer();
  await new Promise<void>((done, fail) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      fail(
        err.code === 'EADDRINUSE'
          ? new StartupError(`port ${port} is in use: pass --port <another port> (or set PORT)`)
          : err,
      ),
    );
    server.listen(port, '127.0.0.1', () => server.close(() => done()));
  });
}

const LOCK_FILE = 'leaseq.pid';

/**
 * Takes the data folder for this process: a lock file with its pid, which a second runtime on the
 * same folder finds (two would share the emulators' files and corrupt them). A lock whose process
 * is gone (killed) is taken over. Answers the release, which close calls.
 */
export function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, LOCK_FILE);
  for (let tries = 0; ; tries++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => releaseLock(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || tries > 1) throw err;
    }
    const holder = Number(readFileSync(file, 'utf8').trim());
    if (Number.isInteger(holder) && holder !== process.pid && isAlive(holder))
      throw new StartupError(
        `the data folder ${dataDir} is in use by process ${holder} (another leaseq start?): stop it, or pass --data-dir <another folder>`,
      );
    unlinkSync(file);
  }
}

function releaseLock(file: string): void {
  try {
    if (Number(readFileSync(file, 'utf8').trim()) === process.pid) unlinkSync(file);
  } catch {
    // Gone already: nothing to release.
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
