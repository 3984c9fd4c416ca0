import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { sleep } from '../../functions/core/async.js';
import { freePort, spawnGuarded, stopGuarded } from '../../infra/local/guarded-process.js';
import type { TestCertificate } from './test-ca.js';

/**
 * Python moto's server (`pip install 'moto[server]'`): DynamoDB, Kinesis, S3 and KMS on one port,
 * over HTTPS with the test's certificate. It tells the services apart by the name a request is
 * addressed to (its Host) and by the service its signature is for, as AWS's endpoints are apart.
 */
export interface MotoServer {
  port: number;
  close(): Promise<void>;
}

export const MOTO_SERVER = 'moto_server';

/** The command's path; throws what to install when it is missing (the test must not pass without it). */
export function motoServerCommand(): string {
  try {
    return execFileSync('sh', ['-c', `command -v ${MOTO_SERVER}`], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(
      `${MOTO_SERVER} is not installed: the bundles' test runs them against it. Install it with ` +
        `\`pip install 'moto[server]>=5.2'\` (Python 3.9+), so that ${MOTO_SERVER} is on the PATH.`,
    );
  }
}

export async function startMotoServer(certificate: TestCertificate, timeoutMs = 30_000): Promise<MotoServer> {
  const command = motoServerCommand();
  // The port is free when picked, not when moto binds it: another process may take it between.
  for (let tries = 1; ; tries++) {
    const port = await freePort();
    const child = spawnGuarded('moto', command, [
      '-H',
      '127.0.0.1',
      '-p',
      String(port),
      '-c',
      certificate.cert,
      '-k',
      certificate.key,
    ]);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    try {
      await answers(port, certificate, child, timeoutMs);
      return { port, close: () => stopGuarded(child) };
    } catch (err) {
      await stopGuarded(child);
      const message = `moto did not start on port ${port}: ${(err as Error).message}\n${stderr}`;
      if (tries === 3 || !stderr.includes('Address already in use')) throw new Error(message);
    }
  }
}

/** It serves once its own API answers over TLS with the test's certificate (not another server on the port). */
async function answers(
  port: number,
  certificate: TestCertificate,
  child: ChildProcess,
  timeoutMs: number,
): Promise<void> {
  const ca = readFileSync(certificate.ca);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`it exited (${child.signalCode ?? child.exitCode})`);
    const status = await new Promise<number | undefined>((resolve) => {
      const req = request(
        // Any name of the certificate: moto's own API answers on every one.
        { host: '127.0.0.1', port, path: '/moto-api/', ca, servername: 'sts.amazonaws.com', timeout: 1000 },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      );
      req.on('error', () => resolve(undefined));
      req.on('timeout', () => req.destroy());
      req.end();
    });
    if (status === 200) return;
    await sleep(100);
  }
  throw new Error(`no answer after ${timeoutMs} ms`);
}
