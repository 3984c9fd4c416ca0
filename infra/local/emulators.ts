import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { z } from 'zod';
import { startDynamoDbLocal } from './dynamodb-local.js';

/**
 * dynalite, kinesalite and s3rver started in this process on the data folder (EMULATORS.md).
 * Each folder is opened once: two servers on the same LevelDB folder crash the process.
 * DynamoDB can be AWS's own DynamoDB Local instead of dynalite (a Java child process).
 */

const require = createRequire(import.meta.url);
const dynalite = require('dynalite') as (opts: Record<string, unknown>) => Server;
const kinesalite = require('kinesalite') as (opts: Record<string, unknown>) => Server;
const S3rver = require('s3rver') as new (
  opts: Record<string, unknown>,
) => { run(): Promise<AddressInfo>; close(): Promise<void> };

export const dynamodbEmulatorSchema = z.enum(['dynalite', 'dynamodb-local']).default('dynalite');
export type DynamoDbEmulator = z.infer<typeof dynamodbEmulatorSchema>;

/** The environment variable that picks the DynamoDB emulator, read only where a process starts. */
export const DYNAMODB_EMULATOR_ENV = 'LEASEQ_DYNAMODB';

export function parseDynamoDbEmulator(value: string | undefined): DynamoDbEmulator {
  const parsed = dynamodbEmulatorSchema.safeParse(value || undefined);
  if (!parsed.success)
    throw new Error(
      `${DYNAMODB_EMULATOR_ENV} must be dynalite or dynamodb-local, not ${JSON.stringify(value)}`,
    );
  return parsed.data;
}

export interface Emulators {
  endpoints: { dynamodb: string; kinesis: string; s3: string };
  dynamodb: DynamoDbEmulator;
  close(): Promise<void>;
}

export interface EmulatorOptions {
  dataDir: string;
  /** kinesalite's total shard limit; sized from the tenant file. */
  shardLimit: number;
  dynamodb: DynamoDbEmulator;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Listening {
  url: string;
  close(): Promise<void>;
}

async function listening(server: Server): Promise<Listening> {
  return { url: await listen(server), close: () => closeServer(server) };
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
  const kinesis = kinesalite({
    path: dir('kinesis'),
    createStreamMs: 0,
    deleteStreamMs: 0,
    updateStreamMs: 0,
    shardLimit: options.shardLimit,
  });
  const s3 = new S3rver({ address: '127.0.0.1', port: 0, directory: dir('s3'), silent: true });
  // In parallel: Java takes seconds to start.
  const started = await Promise.allSettled([
    options.dynamodb === 'dynalite'
      ? listening(dynalite({ path: dir('dynamodb'), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 }))
      : startDynamoDbLocal(dir('dynamodb-local')),
    listening(kinesis),
    s3.run().then((address) => ({ url: `http://127.0.0.1:${address.port}`, close: () => s3.close() })),
  ]);
  const servers = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = started.find((r) => r.status === 'rejected');
  if (failed) {
    await Promise.allSettled(servers.map((server) => server.close()));
    throw failed.reason;
  }
  const [dynamo, kinesisServer, s3Server] = servers as [Listening, Listening, Listening];
  return {
    endpoints: { dynamodb: dynamo.url, kinesis: kinesisServer.url, s3: s3Server.url },
    dynamodb: options.dynamodb,
    async close() {
      await Promise.all(servers.map((server) => server.close()));
    },
  };
}
