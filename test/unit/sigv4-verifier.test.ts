import { randomBytes } from 'node:crypto';
import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SignatureV4 } from '@smithy/signature-v4';
import { beforeEach, describe, expect, it } from 'vitest';
import { LocalSecretBox, type SecretBox } from '../../functions/access/secret-box.js';
import { type SignedRequest, SqsAuthenticator } from '../../functions/access/sigv4-verifier.js';
import {
  newAccessKeyId,
  newSecretAccessKey,
  type SqsCredentials,
} from '../../functions/access/sqs-credentials.js';
import { hashApiKey, KeyRing } from '../../functions/core/auth.js';
import { SqsAuthError } from '../../functions/sqs/errors.js';
import type { StoredApiKey } from '../../functions/store/api-keys.js';
import type { StoredSqsCredentials } from '../../functions/store/sqs-credentials.js';
import { sdkSignedRequest } from '../helpers/sqs-signing.js';

/**
 * The SigV4 verifier against requests the real @aws-sdk/client-sqs signs (its request handler
 * hands each signed request to the test instead of the network). The stores are in memory here;
 * test/integration/sqs-credentials.test.ts runs the same verifier on the emulators' table.
 */

const TENANT = 'test';
const box = new LocalSecretBox(randomBytes(32), TENANT);

const worker: SqsCredentials = { access_key_id: newAccessKeyId(), secret_access_key: newSecretAccessKey() };
const admin: SqsCredentials = { access_key_id: newAccessKeyId(), secret_access_key: newSecretAccessKey() };

let credentials: Map<string, StoredSqsCredentials>;
let apiKeys: Map<string, StoredApiKey>;
let opened: number;
let clock: number;

const counting: SecretBox = {
  seal: (plain) => box.seal(plain),
  open: (sealed) => {
    opened++;
    return box.open(sealed);
  },
};

const ring = new KeyRing([{ name: 'local-admin', sha256: hashApiKey('admin-key'), scopes: ['admin:*'] }]);

function verifier(options: { ttlMs?: number } = {}): SqsAuthenticator {
  return new SqsAuthenticator({
    ring,
    apiKeys: { byName: async (name) => apiKeys.get(name) },
    credentials: { get: async (id) => credentials.get(id) },
    box: counting,
    now: () => clock,
    ...options,
  });
}

async function stored(c: SqsCredentials, key_name: string, key_kind: 'runtime' | 'fixed') {
  credentials.set(c.access_key_id, {
    access_key_id: c.access_key_id,
    key_name,
    key_kind,
    sealed_secret: await box.seal(c.secret_access_key),
    created_at: 0,
    created_by: 'test',
  });
}

beforeEach(async () => {
  credentials = new Map();
  apiKeys = new Map([
    [
      'worker',
      {
        name: 'worker',
        sha256: 'a'.repeat(64),
        scopes: ['produce:jobs', 'consume:jobs'],
        created_at: 0,
        created_by: 'test',
      },
    ],
  ]);
  await stored(worker, 'worker', 'runtime');
  await stored(admin, 'local-admin', 'fixed');
  opened = 0;
  clock = Date.now();
});

/** What the SDK would send: the request its signer produced, as the endpoint receives it. */
const sdkRequest = (creds: SqsCredentials = worker, command?: GetQueueUrlCommand) =>
  sdkSignedRequest(creds, command);

async function refusal(request: SignedRequest, v = verifier()): Promise<SqsAuthError> {
  const err = await v.authenticate(request).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SqsAuthError);
  return err as SqsAuthError;
}

describe('SqsAuthenticator', () => {
  it("accepts what the SQS client signs, as the key's principal", async () => {
    const request = await sdkRequest();
    // What the SDK signs today; the verifier follows whatever list a request names.
    expect(request.headers.authorization).toMatch(/SignedHeaders=[^,]*host;x-amz-content-sha256;x-amz-date/);
    await expect(verifier().authenticate(request)).resolves.toEqual({
      name: 'worker',
      scopes: ['produce:jobs', 'consume:jobs'],
    });
  });

  it('accepts the headers lower-cased (as API Gateway v2 delivers them) or in any case', async () => {
    const request = await sdkRequest();
    const lower = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v]));
    const upper = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toUpperCase(), v]));
    await expect(verifier().authenticate({ ...request, headers: lower })).resolves.toMatchObject({
      name: 'worker',
    });
    await expect(verifier().authenticate({ ...request, headers: upper })).resolves.toMatchObject({
      name: 'worker',
    });
  });

  it('accepts a body given as bytes', async () => {
    const request = await sdkRequest();
    const body = Buffer.from(request.body as string, 'utf8');
    await expect(verifier().authenticate({ ...request, body })).resolves.toMatchObject({ name: 'worker' });
  });

  it('resolves credentials of a configured key by its name in the key ring', async () => {
    await expect(verifier().authenticate(await sdkRequest(admin))).resolves.toEqual({
      name: 'local-admin',
      scopes: ['admin:*'],
    });
  });

  it('lets a header that was not signed change freely', async () => {
    const request = await sdkRequest();
    const headers = {
      ...request.headers,
      'user-agent': 'something else entirely',
      'x-forwarded-for': '203.0.113.10',
      'x-amzn-trace-id': 'Root=1-00000000-000000000000000000000000',
    };
    await expect(verifier().authenticate({ ...request, headers })).resolves.toMatchObject({ name: 'worker' });
  });

  describe('refuses a request changed after signing', () => {
    it('in its body (the signed content hash no longer matches)', async () => {
      const request = await sdkRequest();
      const body = (request.body as string).replace('hello', 'HELLO');
      const err = await refusal({ ...request, body });
      expect(err.code).toBe('SignatureDoesNotMatch');
      expect(err.message).toMatch(/x-amz-content-sha256/);
    });

    it('in its body and its content hash together', async () => {
      const request = await sdkRequest();
      const body = (request.body as string).replace('hello', 'HELLO');
      const { createHash } = await import('node:crypto');
      const headers = {
        ...request.headers,
        'x-amz-content-sha256': createHash('sha256').update(body).digest('hex'),
      };
      expect((await refusal({ ...request, body, headers })).code).toBe('SignatureDoesNotMatch');
    });

    it('in a signed header', async () => {
      const request = await sdkRequest();
      const headers = { ...request.headers, 'x-amz-target': 'AmazonSQS.PurgeQueue' };
      const err = await refusal({ ...request, headers });
      expect(err.code).toBe('SignatureDoesNotMatch');
      expect(err.message).toMatch(/signature we calculated does not match/);
    });

    it('by losing a signed header', async () => {
      const request = await sdkRequest();
      const { 'x-amz-target': _, ...headers } = request.headers;
      expect((await refusal({ ...request, headers })).code).toBe('SignatureDoesNotMatch');
    });

    it('in its path', async () => {
      const request = await sdkRequest();
      expect((await refusal({ ...request, path: '/000000000000/jobs' })).code).toBe('SignatureDoesNotMatch');
    });

    it('in its query', async () => {
      const request = await sdkRequest();
      expect((await refusal({ ...request, query: { Action: 'PurgeQueue' } })).code).toBe(
        'SignatureDoesNotMatch',
      );
    });

    it('in its method', async () => {
      const request = await sdkRequest();
      expect((await refusal({ ...request, method: 'PUT' })).code).toBe('SignatureDoesNotMatch');
    });
  });

  it('verifies a path and a query signed by SignatureV4 as the SQS client configures it', async () => {
    const client = new SQSClient({ region: 'eu-west-1' });
    const signer = new SignatureV4({
      service: 'sqs',
      region: 'eu-west-1',
      credentials: { accessKeyId: worker.access_key_id, secretAccessKey: worker.secret_access_key },
      sha256: client.config.sha256,
      uriEscapePath: true,
    });
    client.destroy();
    const request = {
      method: 'GET',
      protocol: 'https:',
      hostname: 'leaseq.example',
      path: '/000000000000/jobs%20and%20more',
      query: { Action: 'ReceiveMessage', 'Attribute.1': 'All', Note: 'a b/c' },
      headers: { host: 'leaseq.example' },
    };
    const signed = await signer.sign(request);
    const received: SignedRequest = {
      method: 'GET',
      path: request.path,
      query: request.query,
      headers: signed.headers,
      body: '',
    };
    await expect(verifier().authenticate(received)).resolves.toMatchObject({ name: 'worker' });
    const tampered = { ...received, query: { ...request.query, Note: 'a b/d' } };
    expect((await refusal(tampered)).code).toBe('SignatureDoesNotMatch');
  });

  it('refuses a signature made with another secret', async () => {
    const request = await sdkRequest({ ...worker, secret_access_key: newSecretAccessKey() });
    expect((await refusal(request)).code).toBe('SignatureDoesNotMatch');
  });

  it.each([
    ['an access key id leaseq never made', () => newAccessKeyId()],
    ["an AWS access key id (not leaseq's shape)", () => 'AKIAIOSFODNN7EXAMPLE'],
  ])('refuses %s as InvalidClientTokenId', async (_, id) => {
    const request = await sdkRequest({ access_key_id: id(), secret_access_key: worker.secret_access_key });
    const err = await refusal(request);
    expect(err.code).toBe('InvalidClientTokenId');
    expect(err.status).toBe(403);
  });

  it.each([
    ['no Authorization header', undefined],
    ['a bearer API key', 'Bearer lq_abc'],
    ['another signing algorithm', 'AWS4-ECDSA-P256-SHA256 Credential=x'],
  ])('refuses %s as MissingAuthenticationToken', async (_, authorization) => {
    const request = await sdkRequest();
    const headers = { ...request.headers, authorization };
    expect((await refusal({ ...request, headers })).code).toBe('MissingAuthenticationToken');
  });

  it.each([
    ['without a Signature', (a: string) => a.replace(/, Signature=.*$/, '')],
    ['with a short Signature', (a: string) => a.slice(0, -2)],
    ['with a scope of another service', (a: string) => a.replace('/sqs/', '/s3/')],
    ['without host among SignedHeaders', (a: string) => a.replace('host;', '')],
  ])('refuses an Authorization header %s', async (_, change) => {
    const request = await sdkRequest();
    const headers = { ...request.headers, authorization: change(request.headers.authorization as string) };
    expect((await refusal({ ...request, headers })).code).toBe('SignatureDoesNotMatch');
  });

  it('refuses a request signed more than 15 minutes before or after the server clock, saying when', async () => {
    const request = await sdkRequest();
    const signedAt = request.headers['x-amz-date'] as string;
    clock += 15 * 60_000 + 5000;
    const late = await refusal(request);
    expect(late.code).toBe('SignatureDoesNotMatch');
    expect(late.message).toMatch(
      new RegExp(`^Signature expired: ${signedAt} is now earlier than \\d{8}T\\d{6}Z`),
    );
    clock -= 2 * (15 * 60_000 + 5000);
    const early = await refusal(request);
    expect(early.code).toBe('SignatureDoesNotMatch');
    expect(early.message).toMatch(
      new RegExp(`^Signature expired: ${signedAt} is still later than \\d{8}T\\d{6}Z`),
    );
    // Inside the window either way, it is fine.
    clock += 15 * 60_000 + 5000 - 14 * 60_000;
    await expect(verifier().authenticate(request)).resolves.toMatchObject({ name: 'worker' });
    clock += 28 * 60_000;
    await expect(verifier().authenticate(request)).resolves.toMatchObject({ name: 'worker' });
  });

  it('refuses an X-Amz-Date that is not the date of the credential scope', async () => {
    const request = await sdkRequest();
    const authorization = (request.headers.authorization as string).replace(/\/\d{8}\//, '/19990101/');
    const err = await refusal({ ...request, headers: { ...request.headers, authorization } });
    expect(err.message).toMatch(/scoped to a valid date/);
  });

  it('stops accepting a revoked key within its cache time, and a deleted set likewise', async () => {
    const v = verifier({ ttlMs: 5_000 });
    const request = await sdkRequest();
    await v.authenticate(request);
    apiKeys.set('worker', { ...(apiKeys.get('worker') as StoredApiKey), revoked_at: clock });
    // Cached: the revocation is not seen for up to 5 s.
    await expect(v.authenticate(request)).resolves.toMatchObject({ name: 'worker' });
    clock += 5_001;
    expect((await refusal(request, v)).code).toBe('InvalidClientTokenId');

    apiKeys.set('worker', { ...(apiKeys.get('worker') as StoredApiKey), revoked_at: undefined });
    clock += 5_001;
    await expect(v.authenticate(await sdkRequest())).resolves.toMatchObject({ name: 'worker' });
    credentials.delete(worker.access_key_id);
    clock += 5_001;
    expect((await refusal(await sdkRequest(), v)).code).toBe('InvalidClientTokenId');
  });

  it('opens a secret once per access key id while it is cached, not once per request', async () => {
    const v = verifier();
    for (let i = 0; i < 5; i++) await v.authenticate(await sdkRequest());
    // Re-read every 5 s, the credentials do not open their secret again.
    clock += 60_000;
    await v.authenticate(await sdkRequest());
    expect(opened).toBe(1);
    clock += 5 * 60_000;
    await v.authenticate(await sdkRequest());
    expect(opened).toBe(2);
  });

  it('refuses credentials whose sealed secret does not open (another secrets key)', async () => {
    const other = new LocalSecretBox(randomBytes(32), TENANT);
    credentials.set(worker.access_key_id, {
      ...(credentials.get(worker.access_key_id) as StoredSqsCredentials),
      sealed_secret: await other.seal(worker.secret_access_key),
    });
    const err = await refusal(await sdkRequest());
    expect(err.code).toBe('InvalidClientTokenId');
    expect(err.message).toMatch(/secrets key changed/);
  });

  it('verifies a GetQueueUrl too (another action, another body)', async () => {
    const request = await sdkRequest(worker, new GetQueueUrlCommand({ QueueName: 'jobs' }));
    expect(request.headers['x-amz-target']).toBe('AmazonSQS.GetQueueUrl');
    await expect(verifier().authenticate(request)).resolves.toMatchObject({ name: 'worker' });
  });
});
