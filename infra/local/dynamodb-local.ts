import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { sleep } from '../../functions/core/async.js';
import { freePort, spawnGuarded, stopGuarded } from './guarded-process.js';

/**
 * AWS's own DynamoDB Local (the jar shipped by the `amplify-dynamodb-simulator` dev
 * dependency), a second opinion on dynalite: it needs Java, so it is a test-time option.
 * Data lives in `-dbPath` (SQLite), so a restart on the same folder keeps it like dynalite.
 * Java runs guarded (guarded-process.ts): no JVM outlives the runtime that started it.
 */

export interface DynamoDbLocal {
  url: string;
  close(): Promise<void>;
}

function dynamodbLocalJar(): { jar: string; lib: string } {
  let pkg: string;
  try {
    pkg = dirname(createRequire(import.meta.url).resolve('amplify-dynamodb-simulator/package.json'));
  } catch {
    throw new Error('LEASEQ_DYNAMODB=dynamodb-local needs the amplify-dynamodb-simulator dev dependency');
  }
  const jar = join(pkg, 'emulator', 'DynamoDBLocal.jar');
  if (!existsSync(jar)) throw new Error(`DynamoDB Local is not at ${jar}`);
  return { jar, lib: join(pkg, 'emulator', 'DynamoDBLocal_lib') };
}

export async function startDynamoDbLocal(dbPath: string, timeoutMs = 60_000): Promise<DynamoDbLocal> {
  const { jar, lib } = dynamodbLocalJar();
  // The port is free when picked, not when Java binds it: another process may take it between.
  for (let tries = 1; ; tries++) {
    const port = await freePort();
    const child = spawnGuarded(
      'dynamodb-local',
      'java',
      [
        // The client compiler only and one GC thread: starts in half the time on a busy machine.
        '-XX:TieredStopAtLevel=1',
        '-XX:+UseSerialGC',
        `-Djava.library.path=${lib}`,
        '-jar',
        jar,
        '-dbPath',
        dbPath,
        // One database file whatever the credentials and region of a client.
        '-sharedDb',
        '-disableTelemetry',
        '-port',
        String(port),
      ],
      // It writes dynamodb-local-metadata.json into its working folder.
      { cwd: dbPath },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    const url = `http://127.0.0.1:${port}`;
    try {
      await answers(url, child, timeoutMs);
      return { url, close: () => stopGuarded(child) };
    } catch (err) {
      await stopGuarded(child);
      const message = `DynamoDB Local did not start on port ${port}: ${(err as Error).message}\n${stderr}`;
      if (tries === 3 || !stderr.includes('Address already in use')) throw new Error(message);
    }
  }
}

/**
 * It serves once it answers an unsigned request as DynamoDB does (400, MissingAuthenticationToken):
 * another server that took the port between (one of a parallel test's emulators) answers otherwise.
 */
async function answers(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`it exited (${child.signalCode ?? child.exitCode})`);
    // Not yet listening, or another server answers: Java then exits on its bind and is retried.
    const body = await fetch(url, { method: 'POST', signal: AbortSignal.timeout(1000) })
      .then((res) => res.text())
      .catch(() => '');
    if (body.includes('MissingAuthenticationToken')) return;
    await sleep(100);
  }
  throw new Error(`no answer after ${timeoutMs} ms`);
}
