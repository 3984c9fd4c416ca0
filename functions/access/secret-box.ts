import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { lazyKms } from '../aws/kms.js';
import type { KmsCalls } from '../aws/kms-client.js';
import type { RuntimeConfig } from '../core/runtime-config.js';

/**
 * Seals secrets kept in the table (the secret half of SQS credentials), so that whoever reads
 * the table, a backup or an export does not hold them: on AWS with a KMS key of the tenant's
 * stack, locally with a key kept in the data folder. A sealed value names its kind, so a value
 * sealed one way is refused, not misread, by the other.
 */
export interface SecretBox {
  seal(plain: string): Promise<string>;
  open(sealed: string): Promise<string>;
}

/** A sealed value that cannot be opened: changed, or sealed with another key or for another tenant. */
export class SealedSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

const LOCAL_PREFIX = 'local1.';
const KMS_PREFIX = 'kms1.';
/** AES-GCM's standard nonce; random per seal (2^32 seals per key keep collisions negligible). */
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM with a 32-byte key. The tenant is the additional authenticated data, as it is
 * KMS's encryption context below: a value copied into another tenant's table does not open.
 */
export class LocalSecretBox implements SecretBox {
  private readonly key: Buffer;

  constructor(
    key: Buffer,
    private readonly tenant: string,
  ) {
    if (key.byteLength !== 32) throw new Error(`a local secrets key is 32 bytes, not ${key.byteLength}`);
    this.key = Buffer.from(key);
  }

  async seal(plain: string): Promise<string> {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(this.tenant, 'utf8'));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const parts = [iv, body, cipher.getAuthTag()].map((b) => b.toString('base64url'));
    return `${LOCAL_PREFIX}${parts.join('.')}`;
  }

  async open(sealed: string): Promise<string> {
    const parts = sealed.startsWith(LOCAL_PREFIX) ? sealed.slice(LOCAL_PREFIX.length).split('.') : [];
    const [iv, body, tag] = parts.map((p) => Buffer.from(p, 'base64url'));
    if (
      parts.length !== 3 ||
      !iv ||
      !body ||
      !tag ||
      iv.byteLength !== IV_BYTES ||
      tag.byteLength !== TAG_BYTES
    )
      throw new SealedSecretError('not a value sealed by the local secrets key');
    const decipher = createDecipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(this.tenant, 'utf8'));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
    } catch {
      throw new SealedSecretError(
        'the sealed value does not open with the local secrets key (changed, or another key)',
      );
    }
  }
}

/**
 * KMS Encrypt/Decrypt with the stack's key. The encryption context names the tenant and the
 * purpose: KMS refuses to decrypt without the same context, and CloudTrail records it with each
 * call. Secrets are 40 characters, far under Encrypt's 4 KB, so no data key is needed.
 */
export class KmsSecretBox implements SecretBox {
  private readonly context: Record<string, string>;

  constructor(
    private readonly kms: KmsCalls,
    private readonly keyId: string,
    tenant: string,
  ) {
    this.context = { 'leaseq:tenant': tenant, 'leaseq:purpose': 'sqs-credentials' };
  }

  async seal(plain: string): Promise<string> {
    const out = await this.kms.encrypt({
      KeyId: this.keyId,
      Plaintext: Buffer.from(plain, 'utf8'),
      EncryptionContext: this.context,
    });
    if (!out.CiphertextBlob) throw new Error('KMS Encrypt answered no ciphertext');
    return `${KMS_PREFIX}${Buffer.from(out.CiphertextBlob).toString('base64')}`;
  }

  async open(sealed: string): Promise<string> {
    if (!sealed.startsWith(KMS_PREFIX)) throw new SealedSecretError('not a value sealed by KMS');
    try {
      const out = await this.kms.decrypt({
        // Named, so a ciphertext of another key is refused rather than decrypted with it.
        KeyId: this.keyId,
        CiphertextBlob: Buffer.from(sealed.slice(KMS_PREFIX.length), 'base64'),
        EncryptionContext: this.context,
      });
      if (!out.Plaintext) throw new Error('KMS Decrypt answered no plaintext');
      return Buffer.from(out.Plaintext).toString('utf8');
    } catch (err) {
      // Anything else (throttling, KMS unreachable) is the caller's to retry, not a bad value.
      if (['InvalidCiphertextException', 'IncorrectKeyException'].includes((err as Error).name))
        throw new SealedSecretError(`KMS refused to open the sealed value: ${(err as Error).name}`);
      throw err;
    }
  }
}

/** The box a function instance seals with, from its config; undefined when it has none. */
export function secretBoxFor(
  config: Pick<RuntimeConfig, 'secrets' | 'region' | 'tenant'>,
  kms: () => KmsCalls = () => lazyKms({ region: config.region, maxAttempts: 4 }),
): SecretBox | undefined {
  const secrets = config.secrets;
  if (!secrets) return undefined;
  if (secrets.kind === 'local')
    return new LocalSecretBox(Buffer.from(secrets.key, 'base64'), config.tenant.tenant);
  return new KmsSecretBox(kms(), secrets.keyId, config.tenant.tenant);
}
