import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { z } from 'zod';
import { startDynamoDbLocal } from './dynamodb-local.js';
import { removeTornS3Puts } from './s3-repair.js';

/**
 * dynalite, kinesalite and s3rver on the data folder (docs/local-runtime.md), on threads of their
 * own: kinesalite and s3rver on one, dynalite on another (emulator-thread.mjs: why). Each folder
 * is opened once: two servers on the same LevelDB folder crash the thread. DynamoDB can be AWS's
 * own DynamoDB Local instead of dynalite (a Java child process).
 */

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
  /**
   * dynalite's writes the last process started and never answered (write-journal.mjs): the only
   * items a crash can have torn from their index entries. Undefined when any item may be (a
   * folder without a journal, not fully repaired since).
   */
  unsettledWrites: UnsettledWrite[] | undefined;
  /** The unsettled writes on `table` are checked and mended (all of its items, when not known). */
  indexRepaired(table: string): void;
  close(): Promise<void>;
}

/** The table and key (as plain values) of a write. */
export interface UnsettledWrite {
  table: string;
  key: Record<string, unknown>;
}

export interface EmulatorOptions {
  dataDir: string;
  /** kinesalite's total shard limit; sized from the tenant file. */
  shardLimit: number;
  dynamodb: DynamoDbEmulator;
}

const ready = z.object({
  kinesis: z.string().optional(),
  s3: z.string().optional(),
  dynamodb: z.string().optional(),
  // DynamoDB JSON, as the requests carried them.
  unsettledWrites: z
    .array(z.object({ table: z.string(), key: z.record(z.string(), z.custom<AttributeValue>()) }))
    .optional(),
});

type EmulatorThread = Awaited<ReturnType<typeof startThread>>;

/** An emulators' thread serving `serve` (emulator-thread.mjs), once its servers listen. */
async function startThread(options: EmulatorOptions, serve: 'kinesis-s3' | 'dynalite') {
  const worker = new Worker(new URL('./emulator-thread.mjs', import.meta.url), {
    workerData: { dataDir: options.dataDir, shardLimit: options.shardLimit, serve },
  });
  const [message] = (await Promise.race([
    once(worker, 'message'),
    once(worker, 'error').then(([err]) => Promise.reject(err)),
    once(worker, 'exit').then(([code]) =>
      Promise.reject(new Error(`the emulators' thread (${serve}) exited (${code})`)),
    ),
  ])) as unknown[];
  return {
    started: ready.parse(message),
    indexRepaired: (table: string) => worker.postMessage({ indexRepaired: table }),
    async close() {
      const exited = once(worker, 'exit');
      worker.postMessage('close');
      await exited;
    },
  };
}

function folder(dataDir: string, name: string): string {
  const path = join(dataDir, name);
  mkdirSync(path, { recursive: true });
  return path;
}

export async function startEmulators(options: EmulatorOptions): Promise<Emulators> {
  // The threads' servers listen before Java picks its port: DynamoDB Local picks a free port and
  // binds it later, and one of ours taking it between answered as if it were DynamoDB.
  removeTornS3Puts(join(options.dataDir, 's3'));
  const threads: EmulatorThread[] = [];
  const closeAll = () => Promise.all(threads.map((t) => t.close()));
  let java: Awaited<ReturnType<typeof startDynamoDbLocal>> | undefined;
  try {
    const starting = [startThread(options, 'kinesis-s3')];
    if (options.dynamodb === 'dynalite') starting.push(startThread(options, 'dynalite'));
    const started = await Promise.allSettled(starting);
    for (const r of started) if (r.status === 'fulfilled') threads.push(r.value);
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    java =
      options.dynamodb === 'dynamodb-local'
        ? await startDynamoDbLocal(folder(options.dataDir, 'dynamodb-local'))
        : undefined;
  } catch (err) {
    await closeAll();
    throw err;
  }
  const [logs, dynalite] = threads as [EmulatorThread, EmulatorThread | undefined];
  const dynamodb = java?.url ?? dynalite?.started.dynamodb;
  const { kinesis, s3 } = logs.started;
  if (!dynamodb || !kinesis || !s3) {
    await Promise.all([closeAll(), java?.close()]);
    throw new Error('an emulator did not start');
  }
  return {
    endpoints: { dynamodb, kinesis, s3 },
    dynamodb: options.dynamodb,
    // DynamoDB Local writes an item and its index entries in one transaction: nothing to mend.
    unsettledWrites: java
      ? []
      : dynalite?.started.unsettledWrites?.map(({ table, key }) => ({ table, key: unmarshall(key) })),
    indexRepaired: (table) => dynalite?.indexRepaired(table),
    async close() {
      await Promise.all([closeAll(), java?.close()]);
    },
  };
}
