import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { KMSClient } from '@aws-sdk/client-kms';
import { describe, expect, it } from 'vitest';
import {
  KmsSecretBox,
  LocalSecretBox,
  SealedSecretError,
  secretBoxFor,
} from '../../functions/access/secret-box.js';
import { kmsCalls } from '../../functions/aws/kms-client.js';
import { parseTenantConfig } from '../../functions/core/config.js';
import { ENV, runtimeConfigFromEnv } from '../../functions/core/runtime-config.js';
import { tampered } from '../helpers/tampered.js';

/** Sealing secrets at rest: the local AES-256-GCM box, and the KMS box through the real KMS client. */

const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';

describe('LocalSecretBox', () => {
  const key = randomBytes(32);
  const box = new LocalSecretBox(key, 'acme');

  it('opens what it sealed, and seals the same secret differently each time', async () => {
    const a = await box.seal(SECRET);
    const b = await box.seal(SECRET);
    expect(a).not.toBe(b);
    expect(a).not.toContain(SECRET);
    expect(a).toMatch(/^local1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(await box.open(a)).toBe(SECRET);
    expect(await box.open(b)).toBe(SECRET);
    expect(await new LocalSecretBox(Buffer.from(key), 'acme').open(a)).toBe(SECRET);
  });

  it('detects any change to a sealed value', async () => {
    const sealed = await box.seal(SECRET);
    const [prefix, iv, body, tag] = sealed.split('.') as [string, string, string, string];
    const flip = (part: string) => {
      const bytes = Buffer.from(part, 'base64url');
      bytes[0] = (bytes[0] as number) ^ 1;
      return bytes.toString('base64url');
    };
    for (const changed of [
      [prefix, flip(iv), body, tag],
      [prefix, iv, flip(body), tag],
      [prefix, iv, body, flip(tag)],
      [prefix, iv, body.slice(0, -2), tag],
      [prefix, iv, body],
      ['kms1', iv, body, tag],
    ]) {
      await expect(box.open(changed.join('.'))).rejects.toThrow(SealedSecretError);
    }
    await expect(box.open('')).rejects.toThrow(SealedSecretError);
  });

  it("refuses a value sealed with another key, or for another tenant (copied into another tenant's table)", async () => {
    const sealed = await box.seal(SECRET);
    await expect(new LocalSecretBox(randomBytes(32), 'acme').open(sealed)).rejects.toThrow(SealedSecretError);
    await expect(new LocalSecretBox(key, 'globex').open(sealed)).rejects.toThrow(SealedSecretError);
  });

  it('takes a 32-byte key only', () => {
    expect(() => new LocalSecretBox(randomBytes(16), 'acme')).toThrow(/32 bytes/);
  });
});

const KEY_ARN = 'arn:aws:kms:eu-west-1:123456789012:key/0b7c4c5e-0000-4000-8000-000000000001';

/**
 * KMS as far as the box meets it, behind the real KMS client (its JSON protocol, serialization
 * and error parsing): a ciphertext is only opened with the key and encryption context it was
 * made with, as KMS does. Records every call.
 */
function kmsEmulator() {
  const calls: { target: string; input: Record<string, unknown> }[] = [];
  const kms = new KMSClient({
    region: 'eu-west-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'x'.repeat(40) },
    maxAttempts: 1,
    requestHandler: {
      handle: async (request: { headers: Record<string, string>; body: string | Uint8Array }) => {
        const target = (request.headers['x-amz-target'] ?? '').replace('TrentService.', '');
        const body = request.body;
        // The SDK's body is a Uint8Array that warns when read as a string: read its bytes.
        const text =
          typeof body === 'string'
            ? body
            : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
        const input = JSON.parse(text);
        calls.push({ target, input });
        const answer = (status: number, body: unknown) => ({
          response: {
            statusCode: status,
            headers: { 'content-type': 'application/x-amz-json-1.1' },
            body: Readable.from([Buffer.from(JSON.stringify(body))]),
          },
        });
        if (target === 'Encrypt') {
          const blob = JSON.stringify({
            key: input.KeyId,
            context: input.EncryptionContext,
            plain: input.Plaintext,
          });
          return answer(200, { CiphertextBlob: Buffer.from(blob).toString('base64'), KeyId: input.KeyId });
        }
        let made: { key: string; context: unknown; plain: string };
        try {
          made = JSON.parse(Buffer.from(input.CiphertextBlob, 'base64').toString('utf8'));
        } catch {
          return answer(400, { __type: 'InvalidCiphertextException', message: 'not a ciphertext' });
        }
        if (made.key !== input.KeyId)
          return answer(400, { __type: 'IncorrectKeyException', message: 'another key' });
        if (JSON.stringify(made.context) !== JSON.stringify(input.EncryptionContext))
          return answer(400, { __type: 'InvalidCiphertextException', message: 'context' });
        return answer(200, { Plaintext: made.plain, KeyId: made.key });
      },
    },
  });
  return { kms: kmsCalls(kms), calls };
}

describe('KmsSecretBox', () => {
  it('seals with Encrypt and opens with Decrypt, both with its key and the tenant in the encryption context', async () => {
    const { kms, calls } = kmsEmulator();
    const box = new KmsSecretBox(kms, KEY_ARN, 'acme');
    const sealed = await box.seal(SECRET);
    expect(sealed).toMatch(/^kms1\./);
    expect(await box.open(sealed)).toBe(SECRET);
    const context = { 'leaseq:tenant': 'acme', 'leaseq:purpose': 'sqs-credentials' };
    expect(calls.map((c) => [c.target, c.input.KeyId, c.input.EncryptionContext])).toEqual([
      ['Encrypt', KEY_ARN, context],
      ['Decrypt', KEY_ARN, context],
    ]);
  });

  it("refuses another tenant's value, a changed one and a local one as SealedSecretError", async () => {
    const { kms } = kmsEmulator();
    const sealed = await new KmsSecretBox(kms, KEY_ARN, 'acme').seal(SECRET);
    await expect(new KmsSecretBox(kms, KEY_ARN, 'globex').open(sealed)).rejects.toThrow(SealedSecretError);
    await expect(new KmsSecretBox(kms, `${KEY_ARN}2`, 'acme').open(sealed)).rejects.toThrow(
      SealedSecretError,
    );
    const box = new KmsSecretBox(kms, KEY_ARN, 'acme');
    await expect(box.open(tampered(sealed))).rejects.toThrow(SealedSecretError);
    const local = await new LocalSecretBox(randomBytes(32), 'acme').seal(SECRET);
    await expect(box.open(local)).rejects.toThrow(SealedSecretError);
  });
});

describe('secretBoxFor', () => {
  const tenant = parseTenantConfig({ tenant: 'acme', queues: { jobs: {} } });
  const env = {
    [ENV.tenantConfig]: JSON.stringify({ tenant: 'acme', queues: { jobs: {} } }),
    [ENV.table]: 'leaseq-acme',
    [ENV.bucket]: 'leaseq-acme-bucket',
    [ENV.region]: 'eu-west-1',
  };

  it('is KMS with the key the stack names in LEASEQ_SECRETS_KEY_ID, and none without it', async () => {
    const config = runtimeConfigFromEnv({ ...env, [ENV.secretsKeyId]: KEY_ARN });
    expect(config.secrets).toEqual({ kind: 'kms', keyId: KEY_ARN });
    const { kms, calls } = kmsEmulator();
    const box = secretBoxFor(config, () => kms);
    expect(box).toBeInstanceOf(KmsSecretBox);
    await box?.seal(SECRET);
    expect(calls[0]?.input.KeyId).toBe(KEY_ARN);
    expect(runtimeConfigFromEnv(env).secrets).toBeUndefined();
    expect(secretBoxFor(runtimeConfigFromEnv(env))).toBeUndefined();
  });

  it('is the local box with the key the local runtime passes', async () => {
    const key = randomBytes(32);
    const box = secretBoxFor({
      tenant,
      region: 'us-east-1',
      secrets: { kind: 'local', key: key.toString('base64') },
    });
    expect(box).toBeInstanceOf(LocalSecretBox);
    expect(await new LocalSecretBox(key, 'acme').open((await box?.seal(SECRET)) as string)).toBe(SECRET);
  });
});
