import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/**
 * dynalite, kinesalite and s3rver started in this process on the data folder (EMULATORS.md).
 * Each folder is opened once: two servers on the same LevelDB folder crash the process.
 */

const require = createRequire(import.meta.url);
const dynalite = require('dynalite') as (opts: Record<string, unknown>) => Server;
const kinesalite = require('kinesalite') as (opts: Record<string, unknown>) => Server;
const S3rver = require('s3rver') as new (
  opts: Record<string, unknown>,
) => { run(): Promise<AddressInfo>; close(): Promise<void> };

export interface Emulators {
  endpoints: { dynamodb: string; kinesis: string; s3: string };
  close(): Promise<void>;
}

export interface EmulatorOptions {
  dataDir: string;
  /** kinesalite's total shard limit; sized from the tenant file. */
  shardLimit: number;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    // Idle keep-alive sockets would hold close() open.
    server.closeIdleConnections();
  });
}

export async function startEmulators(options: EmulatorOptions): Promise<Emulators> {
  const dir = (name: string) => {
    const path = join(options.dataDir, name);
    mkdirSync(path, { recursive: true });
    return path;
  };
  const dynamo = dynalite({ path: dir('dynamodb'), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  const kinesis = kinesalite({
    path: dir('kinesis'),
    createStreamMs: 0,
    deleteStreamMs: 0,
    updateStreamMs: 0,
    shardLimit: options.shardLimit,
  });
  const s3 = new S3rver({ address: '127.0.0.1', port: 0, directory: dir('s3'), silent: true });
  const [dynamodbUrl, kinesisUrl, s3Address] = await Promise.all([listen(dynamo), listen(kinesis), s3.run()]);
  return {
    endpoints: { dynamodb: dynamodbUrl, kinesis: kinesisUrl, s3: `http://127.0.0.1:${s3Address.port}` },
    async close() {
      await Promise.all([closeServer(dynamo), closeServer(kinesis), s3.close()]);
    },
  };
}
