import { createClients } from '../../functions/aws/clients.js';
import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListShardsCommand,
} from '../../functions/aws/kinesis.js';
import type { TestRuntime } from './runtime.js';

/**
 * A polling reader of `stream`'s first shard that asks far past five reads a second, so a polling
 * mapping would hardly ever be served (the runtime run as AWS runs it refuses the rest); stop()
 * answers how many of its reads were refused.
 */
export async function hogReads(t: TestRuntime, stream: string): Promise<{ stop: () => Promise<number> }> {
  const clients = createClients({ region: 'us-east-1', endpoints: t.runtime.endpoints, maxAttempts: 1 });
  const ShardIterator = await firstIterator(clients, stream);
  let hogging = true;
  const refused = (async () => {
    let n = 0;
    while (hogging) {
      await clients.kinesis.send(new GetRecordsCommand({ ShardIterator })).catch(() => n++);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    clients.destroy();
    return n;
  })();
  await new Promise((resolve) => setTimeout(resolve, 300));
  return {
    stop: () => {
      hogging = false;
      return refused;
    },
  };
}

/** An iterator at the start of `stream`'s first shard. */
export async function firstIterator(
  clients: ReturnType<typeof createClients>,
  stream: string,
): Promise<string | undefined> {
  const [shard] = (await clients.kinesis.send(new ListShardsCommand({ StreamName: stream }))).Shards ?? [];
  const { ShardIterator } = await clients.kinesis.send(
    new GetShardIteratorCommand({
      StreamName: stream,
      ShardId: shard?.ShardId,
      ShardIteratorType: 'TRIM_HORIZON',
    }),
  );
  return ShardIterator;
}
