// The JavaScript emulators (dynalite, kinesalite, s3rver) on threads of their own, started by
// emulators.ts: one for Kinesis and S3, one for dynalite. They are a stand-in for services that
// run elsewhere: on the runtime's thread they would share one core with the API, the pollers and
// their callers, and every request's wait would include theirs; on one thread together, a
// DynamoDB write would wait behind a long GetRecords as it never does on AWS. Plain JavaScript so
// that a Worker loads it under tsx, vitest and node alike.
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { answerAtTimestampOnQuietShards, settleInterruptedChanges } from './kinesalite-repairs.mjs';
import { WriteJournal } from './write-journal.mjs';

const require = createRequire(import.meta.url);

/** @type {{ dataDir: string; shardLimit: number; serve: 'kinesis-s3' | 'dynalite' }} */
const options = workerData;
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

/** The servers of `options.serve`, listening, by the endpoint they stand for. */
async function startServers() {
  if (options.serve === 'dynalite') {
    // Read before dynalite answers anything, so the journal of the last process is what it left.
    const journal = new WriteJournal(join(options.dataDir, JOURNAL));
    const dynalite = require('dynalite');
    const server = dynalite({ path: dir('dynamodb'), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
    journal.watch(server);
    try {
      const dynamodb = await listening(server);
      return { servers: { dynamodb }, journal };
    } catch (err) {
      journal.close();
      throw err;
    }
  }
  answerAtTimestampOnQuietShards();
  const kinesalite = require('kinesalite');
  const S3rver = require('s3rver');
  const s3 = new S3rver({ address: '127.0.0.1', port: 0, directory: dir('s3'), silent: true });
  await settleInterruptedChanges(dir('kinesis'));
  const started = await Promise.allSettled([
    listening(
      kinesalite({
        path: dir('kinesis'),
        createStreamMs: 0,
        deleteStreamMs: 0,
        updateStreamMs: 0,
        shardLimit: options.shardLimit,
      }),
    ),
    s3.run().then((address) => ({ url: `http://127.0.0.1:${address.port}`, close: () => s3.close() })),
  ]);
  const [kinesis, s3Server] = started.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
  const failed = started.find((r) => r.status === 'rejected');
  if (failed) {
    await Promise.allSettled([kinesis?.close(), s3Server?.close()]);
    throw failed.reason;
  }
  return { servers: { kinesis, s3: s3Server } };
}

async function start() {
  const { servers, journal } = await startServers();
  parentPort.on('message', async (message) => {
    if (message?.indexRepaired) journal?.settleCarried(message.indexRepaired);
    if (message !== 'close') return;
    await Promise.all(Object.values(servers).map((server) => server.close()));
    journal?.close();
    parentPort.close();
  });
  parentPort.postMessage({
    ...Object.fromEntries(Object.entries(servers).map(([name, server]) => [name, server.url])),
    ...(journal ? { unsettledWrites: journal.carried } : {}),
  });
}

await start();
