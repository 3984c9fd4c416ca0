import { type DocumentClient, GetCommand, PutCommand } from '../aws/dynamodb.js';
import type { CommitMarks as Marks } from '../core/commit-stall.js';
import { commitMarksKey } from './keys.js';

/** Each shard's commit point as the sweep last saw it (core/commit-stall.ts): one item per namespace. */
export class CommitMarks {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  async get(namespace: string): Promise<Marks> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: commitMarksKey(namespace) }),
    );
    return (out.Item?.marks as Marks | undefined) ?? {};
  }

  async set(namespace: string, marks: Marks): Promise<void> {
    await this.doc.send(
      new PutCommand({ TableName: this.table, Item: { ...commitMarksKey(namespace), marks } }),
    );
  }
}
