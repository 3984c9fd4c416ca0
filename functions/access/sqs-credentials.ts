import { randomBytes, randomInt } from 'node:crypto';
import { SqsCredentialsUnavailableError } from '../core/errors.js';
import type {
  CredentialOwnerKind,
  SqsCredentialStore,
  StoredSqsCredentials,
} from '../store/sqs-credentials.js';
import type { SecretBox } from './secret-box.js';

/**
 * Making SQS credentials for an API key: AWS-shaped, so SDKs and tools take them as they are
 * (an access key id of 20 upper-case characters, a secret of 40), the secret sealed before it is
 * stored and shown to the caller once. One set per key: a new set ends the key's older ones.
 */

export interface SqsCredentials {
  access_key_id: string;
  secret_access_key: string;
}

/** The API key a set of credentials acts as. */
export interface CredentialOwner {
  name: string;
  kind: CredentialOwnerKind;
}

/** `LQIA` (leaseq's, as AWS's long-term keys are `AKIA`) and 16 of base32's alphabet: 80 random bits. */
export const ACCESS_KEY_ID = /^LQIA[A-Z2-7]{16}$/;
export const SECRET_ACCESS_KEY = /^[A-Za-z0-9+/]{40}$/;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export function newAccessKeyId(): string {
  let id = 'LQIA';
  for (let i = 0; i < 16; i++) id += BASE32[randomInt(BASE32.length)];
  return id;
}

/** 30 random bytes are 40 base64 characters: 240 bits, AWS's shape. */
export function newSecretAccessKey(): string {
  return randomBytes(30).toString('base64');
}

/** Credentials made and sealed, not stored yet: sealing (a KMS call) can fail before anything is written. */
export interface MintedCredentials {
  credentials: SqsCredentials;
  item: StoredSqsCredentials;
}

export class SqsCredentialIssuer {
  constructor(
    private readonly store: SqsCredentialStore,
    private readonly box: SecretBox | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Throws 409 SQS_CREDENTIALS_UNAVAILABLE when there is no box: call it before changing anything. */
  requireAvailable(): SecretBox {
    if (!this.box) throw new SqsCredentialsUnavailableError();
    return this.box;
  }

  async mint(owner: CredentialOwner, actor: string, given?: SqsCredentials): Promise<MintedCredentials> {
    const box = this.requireAvailable();
    const credentials = given ?? { access_key_id: newAccessKeyId(), secret_access_key: newSecretAccessKey() };
    return {
      credentials,
      item: {
        access_key_id: credentials.access_key_id,
        key_name: owner.name,
        key_kind: owner.kind,
        sealed_secret: await box.seal(credentials.secret_access_key),
        created_at: this.now(),
        created_by: actor,
      },
    };
  }

  /**
   * Stores minted credentials, then ends the owner's older sets. Older only: of two rotations at
   * once the later survives instead of each ending the other. A crash between the two steps
   * leaves the older set working until the key's next rotation or revocation.
   */
  async install(minted: MintedCredentials): Promise<MintedCredentials> {
    let stored = minted;
    // 80 random bits collide about never; drawing again costs nothing when they do.
    for (let tries = 0; !(await this.store.create(stored.item)); tries++) {
      if (tries >= 3) throw new Error('could not draw an unused access key id');
      stored = await this.mint(
        { name: stored.item.key_name, kind: stored.item.key_kind },
        stored.item.created_by,
      );
    }
    await this.endOlder(stored.item);
    return stored;
  }

  async issue(owner: CredentialOwner, actor: string): Promise<SqsCredentials & { created_at: number }> {
    const stored = await this.install(await this.mint(owner, actor));
    return { ...stored.credentials, created_at: stored.item.created_at };
  }

  /**
   * Stores credentials made elsewhere (the local runtime keeps its admin's in the data folder), as
   * they are, sealed anew, and ends every other set of that owner.
   */
  async register(owner: CredentialOwner, credentials: SqsCredentials, actor: string): Promise<void> {
    const { item } = await this.mint(owner, actor, credentials);
    await this.store.save(item);
    for (const other of await this.ofOwner(owner))
      if (other.access_key_id !== item.access_key_id) await this.store.delete(other.access_key_id);
  }

  /** Ends every set of an owner (its key is revoked). */
  async end(owner: CredentialOwner): Promise<void> {
    for (const c of await this.ofOwner(owner)) await this.store.delete(c.access_key_id);
  }

  /** The newest access key id of each run-time key, by key name: what GET /keys shows. */
  async currentOfRuntimeKeys(): Promise<Map<string, string>> {
    const newest = new Map<string, StoredSqsCredentials>();
    for (const c of await this.store.list()) {
      if (c.key_kind !== 'runtime') continue;
      const seen = newest.get(c.key_name);
      if (!seen || isOlder(seen, c)) newest.set(c.key_name, c);
    }
    return new Map([...newest].map(([name, c]) => [name, c.access_key_id]));
  }

  private async ofOwner(owner: CredentialOwner): Promise<StoredSqsCredentials[]> {
    return (await this.store.list()).filter((c) => c.key_name === owner.name && c.key_kind === owner.kind);
  }

  private async endOlder(item: StoredSqsCredentials): Promise<void> {
    for (const other of await this.ofOwner({ name: item.key_name, kind: item.key_kind }))
      if (isOlder(other, item)) await this.store.delete(other.access_key_id);
  }
}

/** Made before `than` (the access key id breaks a tie, so two sets never both count as older). */
function isOlder(a: StoredSqsCredentials, than: StoredSqsCredentials): boolean {
  return (
    a.created_at < than.created_at ||
    (a.created_at === than.created_at && a.access_key_id < than.access_key_id)
  );
}
