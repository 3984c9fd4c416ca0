import { DeleteCommand, type DocumentClient, GetCommand, PutCommand, QueryCommand } from '../aws/dynamodb.js';
import { buildKeyCondition } from './expression.js';
import { SQS_CREDENTIALS_PK, sqsCredentialsKey } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * SQS credentials (access key id + secret) of API keys: one item per access key id, the secret
 * sealed (access/secret-box.ts), never in the clear. What they act as is named, not copied: the
 * key's scopes and revocation are read from the key itself when they authenticate.
 */

/**
 * `runtime`: a key made with POST /keys (the api key store's); `fixed`: a key of the
 * configuration (the tenant file's, or the local runtime's admin key), found by name in the KeyRing.
 */
export type CredentialOwnerKind = 'runtime' | 'fixed';

export interface StoredSqsCredentials {
  access_key_id: string;
  key_name: string;
  key_kind: CredentialOwnerKind;
  /** The secret access key, sealed. */
  sealed_secret: string;
  created_at: number;
  created_by: string;
}

export class SqsCredentialStore {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  /** False when the access key id is taken (a new one is drawn). */
  async create(item: StoredSqsCredentials): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { ...sqsCredentialsKey(item.access_key_id), ...item },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  /** Writes the item whatever was there: a fixed key's credentials registered again, sealed anew. */
  async save(item: StoredSqsCredentials): Promise<void> {
    await this.doc.send(
      new PutCommand({ TableName: this.table, Item: { ...sqsCredentialsKey(item.access_key_id), ...item } }),
    );
  }

  async get(accessKeyId: string): Promise<StoredSqsCredentials | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: sqsCredentialsKey(accessKeyId), ConsistentRead: true }),
    );
    return out.Item ? strip(out.Item) : undefined;
  }

  /** Every set of the tenant's (a handful: one per key at most, but for a crash mid-rotation). */
  async list(): Promise<StoredSqsCredentials[]> {
    const items: StoredSqsCredentials[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          ...buildKeyCondition('#pk = :pk', { ':pk': SQS_CREDENTIALS_PK }),
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      items.push(...(out.Items ?? []).map(strip));
      start = out.LastEvaluatedKey;
    } while (start);
    return items;
  }

  async delete(accessKeyId: string): Promise<void> {
    await this.doc.send(new DeleteCommand({ TableName: this.table, Key: sqsCredentialsKey(accessKeyId) }));
  }
}

function strip(item: Record<string, unknown>): StoredSqsCredentials {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as unknown as StoredSqsCredentials;
}
