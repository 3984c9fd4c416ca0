import { type DocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '../aws/dynamodb.js';
import type { KeyLimits } from '../core/auth.js';
import { buildKeyCondition, buildUpdate } from './expression.js';
import { API_KEYS_PK, apiKeyHashKey } from './keys.js';
import { isConditionFailed } from './util.js';

/**
 * API keys made at run time. Only the SHA-256 of a key is stored. Two items per key: the
 * one authentication reads (by hash) and the listing entry (by name, which is unique).
 */

export interface StoredApiKey {
  name: string;
  sha256: string;
  scopes: string[];
  rate_limits?: KeyLimits;
  created_at: number;
  created_by: string;
  revoked_at?: number;
}

export class ApiKeyStore {
  constructor(
    private readonly doc: DocumentClient,
    private readonly table: string,
  ) {}

  /** False when the name is taken. The listing entry claims the name first. */
  async create(key: StoredApiKey): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { pk: API_KEYS_PK, sk: key.name, ...key },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
    await this.doc.send(
      new PutCommand({ TableName: this.table, Item: { ...apiKeyHashKey(key.sha256), ...key } }),
    );
    return true;
  }

  async byHash(sha256: string): Promise<StoredApiKey | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: apiKeyHashKey(sha256), ConsistentRead: true }),
    );
    return out.Item as StoredApiKey | undefined;
  }

  async byName(name: string): Promise<StoredApiKey | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: API_KEYS_PK, sk: name }, ConsistentRead: true }),
    );
    return out.Item as StoredApiKey | undefined;
  }

  async list(): Promise<StoredApiKey[]> {
    const keys: StoredApiKey[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          ...buildKeyCondition('#pk = :pk', { ':pk': API_KEYS_PK }),
          ExclusiveStartKey: start,
        }),
      );
      keys.push(...((out.Items ?? []) as StoredApiKey[]));
      start = out.LastEvaluatedKey;
    } while (start);
    return keys;
  }

  /** Revokes the key that authenticates first, then its listing entry. */
  async revoke(key: StoredApiKey, now: number): Promise<void> {
    const spec = buildUpdate({ set: { revoked_at: now } });
    await this.doc.send(
      new UpdateCommand({ TableName: this.table, Key: apiKeyHashKey(key.sha256), ...spec }),
    );
    await this.doc.send(
      new UpdateCommand({ TableName: this.table, Key: { pk: API_KEYS_PK, sk: key.name }, ...spec }),
    );
  }
}
