import { randomBytes } from 'node:crypto';
import { hashApiKey, type KeyLimits } from '../core/auth.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import type { ApiKeyStore, StoredApiKey } from '../store/api-keys.js';
import type { SqsCredentialIssuer, SqsCredentials } from './sqs-credentials.js';

/** Making, listing and revoking API keys at run time (scope `admin:*`), and their SQS credentials. */

export interface ApiKeyView {
  name: string;
  scopes: string[];
  rate_limits: KeyLimits;
  created_at: string;
  created_by: string;
  revoked_at: string | null;
  /** The key's SQS credentials' access key id; their secret is shown once, when made. */
  sqs_access_key_id: string | null;
}

function view(k: StoredApiKey, sqsAccessKeyId: string | undefined): ApiKeyView {
  return {
    name: k.name,
    scopes: k.scopes,
    rate_limits: k.rate_limits ?? {},
    created_at: new Date(k.created_at).toISOString(),
    created_by: k.created_by,
    revoked_at: k.revoked_at === undefined ? null : new Date(k.revoked_at).toISOString(),
    sqs_access_key_id: sqsAccessKeyId ?? null,
  };
}

export interface SqsCredentialsAnswer {
  name: string;
  sqs_credentials: SqsCredentials;
  created_at: string;
}

export class KeyAdmin {
  constructor(
    private readonly store: ApiKeyStore,
    private readonly sqs: SqsCredentialIssuer,
    private readonly now: () => number = Date.now,
  ) {}

  /** The key itself (and the SQS secret, when asked for) is in this answer only; leaseq keeps its hash. */
  async create(
    name: string,
    scopes: string[],
    actor: string,
    limits?: KeyLimits,
    options: { sqsCredentials?: boolean } = {},
  ): Promise<ApiKeyView & { key: string; sqs_credentials?: SqsCredentials }> {
    // Sealed before the key is made: a deployment without a secrets key, or KMS failing, refuses
    // the request whole instead of leaving a key without the credentials it was asked for.
    const minted = options.sqsCredentials ? await this.sqs.mint({ name, kind: 'runtime' }, actor) : undefined;
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
    if (!minted) return { ...view(stored, undefined), key };
    const installed = await this.sqs.install(minted);
    return {
      ...view(stored, installed.credentials.access_key_id),
      key,
      sqs_credentials: installed.credentials,
    };
  }

  /** New SQS credentials for a run-time key; its earlier ones stop working (within the verifier's cache, 5 s). */
  async createSqsCredentials(name: string, actor: string): Promise<SqsCredentialsAnswer> {
    this.sqs.requireAvailable();
    const key = await this.store.byName(name);
    if (!key) throw new NotFoundError(`no API key named ${JSON.stringify(name)}`);
    if (key.revoked_at !== undefined)
      throw new ConflictError(`the API key ${JSON.stringify(name)} is revoked`);
    const { created_at, ...credentials } = await this.sqs.issue({ name, kind: 'runtime' }, actor);
    return { name, sqs_credentials: credentials, created_at: new Date(created_at).toISOString() };
  }

  async list(): Promise<ApiKeyView[]> {
    const [keys, sqs] = await Promise.all([this.store.list(), this.sqs.currentOfRuntimeKeys()]);
    return keys.map((k) => view(k, sqs.get(k.name)));
  }

  /** Its SQS credentials end first, then the key: what authenticates goes before its listing. */
  async revoke(name: string): Promise<void> {
    const key = await this.store.byName(name);
    if (!key) throw new NotFoundError(`no API key named ${JSON.stringify(name)}`);
    await this.sqs.end({ name, kind: 'runtime' });
    if (key.revoked_at === undefined) await this.store.revoke(key, this.now());
  }
}
