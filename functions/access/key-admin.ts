import { randomBytes } from 'node:crypto';
import { hashApiKey, type KeyLimits } from '../core/auth.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import type { ApiKeyStore, StoredApiKey } from '../store/api-keys.js';

/** Making, listing and revoking API keys at run time (scope `admin:*`). */

export interface ApiKeyView {
  name: string;
  scopes: string[];
  rate_limits: KeyLimits;
  created_at: string;
  created_by: string;
  revoked_at: string | null;
}

function view(k: StoredApiKey): ApiKeyView {
  return {
    name: k.name,
    scopes: k.scopes,
    rate_limits: k.rate_limits ?? {},
    created_at: new Date(k.created_at).toISOString(),
    created_by: k.created_by,
    revoked_at: k.revoked_at === undefined ? null : new Date(k.revoked_at).toISOString(),
  };
}

export class KeyAdmin {
  constructor(
    private readonly store: ApiKeyStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** The key itself is in this answer only; leaseq keeps its hash. */
  async create(
    name: string,
    scopes: string[],
    actor: string,
    limits?: KeyLimits,
  ): Promise<ApiKeyView & { key: string }> {
    const key = `lq_${randomBytes(32).toString('base64url')}`;
    const stored: StoredApiKey = {
      name,
      sha256: hashApiKey(key),
      scopes,
      ...(limits ? { rate_limits: limits } : {}),
      created_at: this.now(),
      created_by: actor,
    };
    if (!(await this.store.create(stored)))
      throw new ConflictError(`an API key named ${JSON.stringify(name)} exists`);
    return { ...view(stored), key };
  }

  async list(): Promise<ApiKeyView[]> {
    return (await this.store.list()).map(view);
  }

  async revoke(name: string): Promise<void> {
    const key = await this.store.byName(name);
    if (!key) throw new NotFoundError(`no API key named ${JSON.stringify(name)}`);
    if (key.revoked_at === undefined) await this.store.revoke(key, this.now());
  }
}
