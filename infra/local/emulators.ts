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
 * dynalite, kinesalite and s3rver on the data folder (docs/local-runtime.md), on a thread of their own
 * (emulator-thread.mjs: why). Each folder is opened once: two servers on the same LevelDB folder
 * crash the thread. DynamoDB can be AWS's own DynamoDB Local instead of dynalite (a Java child
 * process).
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

/**
 * Kinesis requests to this path of the emulator are a fan-out reader's: their reads do not count
 * against a shard's five a second (kinesalite-repairs.mjs, readsOnFanOut).
 */
export const FAN_OUT_PATH = '/fan-out';

export interface EmulatorOptions {
  dataDir: string;
  /** kinesalite's total shard limit; sized from the tenant file. */
  shardLimit: number;
  dynamodb: DynamoDbEmulator;
  /** Refuse GetRecords past this many a second per shard, as Kinesis does (default: no limit). */
  readsPerShard?: number;
}

const ready = z.object({
  kinesis: z.string(),
  s3: z.string(),
  dynamodb: z.string().optional(),
  // DynamoDB JSON, as the requests carried them.
  unsettledWrites: z
    .array(z.object({ table: z.string(), key: z.record(z.string(), z.custom<AttributeValue>()) }))
    .optional(),
});

/** The JavaScript emulators' thread, once they listen. */
async function startThread(options: EmulatorOptions) {
  const worker = new Worker(new URL('./emulator-thread.mjs', import.meta.url), {
    workerData: {
      dataDir: options.dataDir,
      shardLimit: options.shardLimit,
      dynalite: options.dynamodb === 'dynalite',
      readsPerShard: options.readsPerShard,
      fanOutPath: FAN_OUT_PATH,
    },
  });
  const [message] = (await Promise.race([
    once(worker, 'message'),
    once(worker, 'error').then(([err]) => Promise.reject(err)),
    once(worker, 'exit').then(([code]) =>
      Promise.reject(new Error(`the emulators' thread exited (${code})`)),
    ),
  ])) as unknown[];
  let closing = false;
  // A request its client dropped can still be reading dynalite's store when close shuts it, and
  // that read's error ends the thread: expected once closing, a crash of the emulators before.
  worker.on('error', (err) => {
    if (!closing) throw err;
  });
  return {
    started: ready.parse(message),
    indexRepaired: (table: string) => worker.postMessage({ indexRepaired: table }),
    async close() {
      const exited = once(worker, 'exit');
      closing = true;
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
  // The thread's servers listen before Java picks its port: DynamoDB Local picks a free port and
  // binds it later, and one of ours taking it between answered as if it were DynamoDB.
  removeTornS3Puts(join(options.dataDir, 's3'));
  const thread = await startThread(options);
  let java: Awaited<ReturnType<typeof startDynamoDbLocal>> | undefined;
  try {
    java =
      options.dynamodb === 'dynamodb-local'
        ? await startDynamoDbLocal(folder(options.dataDir, 'dynamodb-local'))
        : undefined;
  } catch (err) {
    await thread.close();
    throw err;
  }
  const dynamodb = java?.url ?? thread.started.dynamodb;
  if (!dynamodb) throw new Error('no DynamoDB emulator started');
  return {
    endpoints: { dynamodb, kinesis: thread.started.kinesis, s3: thread.started.s3 },
    dynamodb: options.dynamodb,
    // DynamoDB Local writes an item and its index entries in one transaction: nothing to mend.
    unsettledWrites: java
      ? []
      : thread.started.unsettledWrites?.map(({ table, key }) => ({ table, key: unmarshall(key) })),
    indexRepaired: thread.indexRepaired,
    async close() {
      await Promise.all([thread.close(), java?.close()]);
    },
  };
}
