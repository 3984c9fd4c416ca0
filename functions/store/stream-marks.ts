import { type DocumentClient, GetCommand, PutCommand, QueryCommand } from '../aws/dynamodb.js';
import { namespaceParts, ownStreamName } from '../core/config.js';
import { StreamMovedError } from '../core/errors.js';
import { streamMarkKey, streamMarksPk } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * Which stream a queue's ranges on a shard were admitted from. Ranges are kept by shard id, and
 * every stream's shards are named alike (`shardId-000000000000`), so a queue moved to another
 * stream would read the new stream's sequence numbers against the old one's ranges and pass over
 * whatever sorts before them: admission confirms the mark first and refuses a move
 * (StreamMovedError) instead, and produce does before it appends, so nothing is accepted onto a
 * stream the queue will not read. A shard with ranges and no mark was admitted before queues
 * could share a stream, from the queue's own. Read once a process per queue and shard.
 */
export class StreamMarks {
  private readonly confirmed = new Set<string>();

  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
    private readonly tenant: string,
  ) {}

  /** Throws StreamMovedError when the queue's ranges on the shard are another stream's. */
  async confirm(queue: string, shard: string, stream: string, hasRanges: boolean): Promise<void> {
    const seen = `${queue}\n${shard}`;
    if (this.confirmed.has(seen)) return;
    const found = await this.read(queue, shard);
    // Written even when it refuses: the drift check reads the marks, and the alarm names the move.
    const marked =
      found ??
      (await this.mark(
        queue,
        shard,
        hasRanges ? ownStreamName(this.tenant, namespaceParts(queue).queue) : stream,
      ));
    if (marked !== stream) throw new StreamMovedError(queue, marked, stream);
    this.confirmed.add(seen);
  }

  /** Confirms each of the stream's shards for the queue (produce, before it appends). */
  async confirmAll(
    queue: string,
    stream: string,
    shards: readonly string[],
    hasRanges: (shard: string) => Promise<boolean>,
  ): Promise<void> {
    await Promise.all(
      shards
        .filter((shard) => !this.confirmed.has(`${queue}\n${shard}`))
        .map(async (shard) => this.confirm(queue, shard, stream, await hasRanges(shard))),
    );
  }

  /** Each shard's mark of a queue, for the drift check. */
  async all(queue: string): Promise<{ shard: string; stream: string }[]> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': streamMarksPk(queue) },
      }),
    );
    return (out.Items ?? []).map((i) => ({ shard: String(i.sk), stream: String(i.stream) }));
  }

  private async read(queue: string, shard: string): Promise<string | undefined> {
    const got = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: streamMarkKey(queue, shard), ConsistentRead: true }),
    );
    return got.Item ? String(got.Item.stream) : undefined;
  }

  /** Marks the shard unless another admitter did first; answers the mark that stands. */
  private async mark(queue: string, shard: string, stream: string): Promise<string> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { ...streamMarkKey(queue, shard), stream },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return stream;
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      return (await this.read(queue, shard)) ?? stream;
    }
  }
}
