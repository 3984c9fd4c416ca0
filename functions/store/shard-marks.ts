import { type DocumentClient, QueryCommand, UpdateCommand } from '../aws/dynamodb.js';
import type { ShardProgress } from '../core/shard-lineage.js';
import { shardMarksPk } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * Per queue, how far its lease layer is with each closed shard (core/shard-lineage.ts): `ended`
 * once every record of the queue in it is admitted, `finished` once nothing of it can hold a key
 * back. One item per shard under one partition, so a look reads them all with one query; a mark
 * only moves forward, so what an instance read stays true.
 */
export interface ShardMark {
  progress?: ShardProgress;
  /** How far the check for the shard's end has read without meeting one of the queue's records. */
  checkedThrough?: string;
}

export class ShardMarks {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  async all(queue: string): Promise<Map<string, ShardMark>> {
    const marks = new Map<string, ShardMark>();
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': shardMarksPk(queue) },
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of out.Items ?? [])
        marks.set(String(item.sk), {
          ...(item.progress ? { progress: item.progress as ShardProgress } : {}),
          ...(item.checked ? { checkedThrough: String(item.checked) } : {}),
        });
      start = out.LastEvaluatedKey;
    } while (start);
    return marks;
  }

  /** Records the shard's progress; a `finished` mark is never taken back to `ended`. */
  async mark(queue: string, shard: string, progress: ShardProgress, now: number): Promise<void> {
    await this.doc
      .send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: shardMarksPk(queue), sk: shard },
          UpdateExpression: 'SET progress = :p, #at = :now',
          ConditionExpression: 'attribute_not_exists(progress) OR progress <> :finished',
          ExpressionAttributeNames: { '#at': `${progress}_at` },
          ExpressionAttributeValues: { ':p': progress, ':now': now, ':finished': 'finished' },
        }),
      )
      .catch((err: unknown) => {
        if (!isConditionFailed(err)) throw err;
      });
  }

  /** How far the end check read the shard without meeting a record of the queue. */
  async checked(queue: string, shard: string, through: string): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: shardMarksPk(queue), sk: shard },
        UpdateExpression: 'SET checked = :c',
        ExpressionAttributeValues: { ':c': through },
      }),
    );
  }
}
