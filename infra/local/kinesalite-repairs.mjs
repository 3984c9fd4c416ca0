// Where kinesalite parts from Kinesis in ways a resharded stream or a killed process meets, mended
// for the emulator thread (emulator-thread.mjs). Plain JavaScript, as that thread is.
import crypto from 'node:crypto';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const kinesaliteDb = require('kinesalite/db');

/**
 * kinesalite marks a stream CREATING or UPDATING (a split, a merge) and carries the change out on
 * a timer: a process killed between the two leaves the stream so for good, and every later
 * reshard and every start's wait for ACTIVE is refused. No timer outlives its process, so such a
 * status found at open is a change that never happened: an UPDATING stream's shards are as they
 * were, and it is ACTIVE again (the reshard that asked plans again from its open shards); a
 * CREATING stream has no shards yet, and is removed for the start to create it again. Runs before
 * kinesalite opens the folder.
 */
export async function settleInterruptedChanges(path) {
  const store = kinesaliteDb.create({ path });
  try {
    const streams = [];
    for await (const entry of store.metaDb.createReadStream()) streams.push(entry);
    for (const { key: name, value: stream } of streams) {
      if (stream.StreamStatus === 'UPDATING')
        await store.metaDb.put(name, { ...stream, StreamStatus: 'ACTIVE' });
      if (stream.StreamStatus === 'CREATING') await store.metaDb.del(name);
    }
  } finally {
    await store.db.close();
  }
}

/**
 * kinesalite answers GetShardIterator AT_TIMESTAMP once it meets a record at or after the time,
 * and never when the shard has none: a closed parent after its end, a quiet shard. Kinesis answers
 * an iterator at the shard's tip then (a closed shard's next read ends it), which is kinesalite's
 * LATEST. Installed before kinesalite loads its actions, which then take this one.
 */
export function answerAtTimestampOnQuietShards() {
  const path = require.resolve('kinesalite/actions/getShardIterator');
  const original = require(path);
  require.cache[path].exports = function getShardIterator(store, data, cb) {
    const timestamp = data.Timestamp;
    if (data.ShardIteratorType !== 'AT_TIMESTAMP' || timestamp == null || timestamp * 1000 > Date.now())
      return original(store, data, cb);
    let shardIx;
    try {
      shardIx = kinesaliteDb.resolveShardId(data.ShardId).shardIx;
    } catch {
      return original(store, data, cb);
    }
    const records = store.getStreamDb(data.StreamName).createReadStream({
      gt: kinesaliteDb.shardIxToHex(shardIx),
      lt: kinesaliteDb.shardIxToHex(shardIx + 1),
    });
    let found = false;
    records.on('data', (item) => {
      if (found || item.value.ApproximateArrivalTimestamp < timestamp) return;
      found = true;
      records.destroy();
      original(store, data, cb);
    });
    records.on('error', cb);
    records.on('end', () => {
      if (!found) original(store, { ...data, ShardIteratorType: 'LATEST', Timestamp: undefined }, cb);
    });
  };
}

/** Whether the request kinesalite is about to act on came through the fan-out path (readsOnFanOut). */
let onFanOut = false;

/**
 * Kinesis serves each shard 5 GetRecords a second, shared by every reader, and refuses the rest
 * with ProvisionedThroughputExceededException; kinesalite serves any number. With a limit set (the
 * runtime run as AWS runs it), reads past it in the last second are refused as Kinesis refuses
 * them, except a fan-out reader's (readsOnFanOut). Installed before kinesalite loads its actions,
 * which then take this one.
 */
export function limitReadsPerShard(perSecond) {
  const path = require.resolve('kinesalite/actions/getRecords');
  const original = require(path);
  /** Per stream and shard, the times of the reads served in the last second. */
  const served = new Map();
  require.cache[path].exports = function getRecords(store, data, cb) {
    const shard = onFanOut ? undefined : iteratorShard(data.ShardIterator);
    if (!shard) return original(store, data, cb);
    const now = Date.now();
    const times = (served.get(shard) ?? []).filter((t) => now - t < 1000);
    served.set(shard, times);
    if (times.length >= perSecond) {
      return cb(
        kinesaliteDb.clientError(
          'ProvisionedThroughputExceededException',
          `Rate exceeded for shard ${shard.split('/')[1]} in stream ${shard.split('/')[0]}.`,
        ),
      );
    }
    times.push(now);
    return original(store, data, cb);
  };
}

/**
 * A reader on enhanced fan-out is pushed its records outside a shard's five reads a second. The
 * local stand-in reads with GetRecords at `path` (kinesalite ignores the path): this marks those
 * requests for the limit. kinesalite acts in its request's 'end' listener, registered after this
 * one's, so the mark is set for exactly that request's action.
 */
export function readsOnFanOut(server, path) {
  const handlers = server.listeners('request');
  server.removeAllListeners('request');
  server.on('request', (req, res) => {
    const fanOut = req.url?.startsWith(path) === true;
    req.on('end', () => {
      onFanOut = fanOut;
    });
    for (const handler of handlers) handler.call(server, req, res);
  });
}

/** `stream/shardId` of a kinesalite iterator, or undefined for one the action itself refuses. */
function iteratorShard(iterator) {
  try {
    const buffer = Buffer.from(iterator, 'base64');
    const decipher = crypto.createDecipheriv(
      'aes-256-cbc',
      kinesaliteDb.ITERATOR_PWD_KEY,
      kinesaliteDb.ITERATOR_PWD_IV,
    );
    const pieces = Buffer.concat([decipher.update(buffer.subarray(8)), decipher.final()])
      .toString('utf8')
      .split('/');
    return pieces.length === 5 ? `${pieces[1]}/${pieces[2]}` : undefined;
  } catch {
    return undefined;
  }
}
