// The JavaScript emulators (dynalite, kinesalite, s3rver) on a thread of their own, started by
// emulators.ts. They are a stand-in for services that run elsewhere: on the runtime's thread they
// would share one core with the API, the pollers and their callers, and every request's wait
// would include theirs. Plain JavaScript so that a Worker loads it under tsx, vitest and node alike.
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import {
  answerAtTimestampOnQuietShards,
  limitReadsPerShard,
  readsOnFanOut,
  settleInterruptedChanges,
} from './kinesalite-repairs.mjs';
import { WriteJournal } from './write-journal.mjs';

const require = createRequire(import.meta.url);
const dynalite = require('dynalite');
/** @type {{ dataDir: string; shardLimit: number; dynalite: boolean; readsPerShard?: number; fanOutPath: string }} */
const options = workerData;
answerAtTimestampOnQuietShards();
if (options.readsPerShard) limitReadsPerShard(options.readsPerShard);
const kinesalite = require('kinesalite');
const S3rver = require('s3rver');
/** dynalite's unsettled writes (write-journal.mjs), beside its folder. */
const JOURNAL = 'dynamodb-writes.jsonl';

function dir(name) {
  const path = join(options.dataDir, name);
  mkdirSync(path, { recursive: true });
  return path;
}

async function listening(server) {
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // Idle keep-alive sockets would hold close() open.
        server.closeIdleConnections();
      }),
  };
}

function kinesisServer() {
  const server = kinesalite({
    path: dir('kinesis'),
    createStreamMs: 0,
    deleteStreamMs: 0,
    updateStreamMs: 0,
    shardLimit: options.shardLimit,
  });
  if (options.readsPerShard) readsOnFanOut(server, options.fanOutPath);
  return server;
}

async function start() {
  // Read before dynalite answers anything, so the journal of the last process is what it left.
  const journal = options.dynalite ? new WriteJournal(join(options.dataDir, JOURNAL)) : undefined;
  const dynamodbServer = options.dynalite
    ? dynalite({ path: dir('dynamodb'), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
    : undefined;
  if (dynamodbServer) journal?.watch(dynamodbServer);
  const s3 = new S3rver({ address: '127.0.0.1', port: 0, directory: dir('s3'), silent: true });
  await settleInterruptedChanges(dir('kinesis'));
  const started = await Promise.allSettled([
    listening(kinesisServer()),
    s3.run().then((address) => ({ url: `http://127.0.0.1:${address.port}`, close: () => s3.close() })),
    ...(dynamodbServer ? [listening(dynamodbServer)] : []),
  ]);
  const servers = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = started.find((r) => r.status === 'rejected');
  if (failed) {
    await Promise.allSettled(servers.map((server) => server.close()));
    journal?.close();
    throw failed.reason;
  }
  const [kinesis, s3Server, dynamodb] = servers;
  parentPort.on('message', async (message) => {
    if (message?.indexRepaired) journal?.settleCarried(message.indexRepaired);
    if (message !== 'close') return;
    await Promise.all(servers.map((server) => server.close()));
    journal?.close();
    parentPort.close();
  });
  parentPort.postMessage({
    kinesis: kinesis.url,
    s3: s3Server.url,
    dynamodb: dynamodb?.url,
    unsettledWrites: journal?.carried,
  });
}

await start();
