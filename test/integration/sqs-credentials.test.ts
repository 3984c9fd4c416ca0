import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqsAuthenticator } from '../../functions/access/sigv4-verifier.js';
import type { SqsCredentials } from '../../functions/access/sqs-credentials.js';
import { createApiHandler } from '../../functions/api/app.js';
import { ScanCommand } from '../../functions/aws/dynamodb.js';
import { hasScope } from '../../functions/core/auth.js';
import { buildSqsAccess } from '../../functions/services.js';
import { SqsAuthError } from '../../functions/sqs/errors.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { startTestRuntime, TEST_TENANT, type TestRuntime } from '../helpers/runtime.js';
import { sdkSignedRequest } from '../helpers/sqs-signing.js';

/**
 * SQS credentials of API keys on the local runtime's emulators: made with POST /keys, verified by
 * the SigV4 verifier as the api function builds it, rotated, revoked, and never stored in the clear.
 */

let t: TestRuntime;

beforeAll(async () => {
  t = await startTestRuntime();
});
afterAll(async () => {
  await t?.close();
});

/** The runtime's admin credentials: its tenant file asks for SQS credentials. */
function adminCredentials(): SqsCredentials {
  const credentials = t.runtime.sqsCredentials;
  if (!credentials) throw new Error('the test tenant has sqs_credentials: true');
  return credentials;
}

/** A verifier as a new api function instance has it (nothing cached). */
const fresh = (): SqsAuthenticator =>
  new SqsAuthenticator(buildSqsAccess(t.runtime.config, t.runtime.clients).sqsAuth);

async function refusedAs(auth: SqsAuthenticator, credentials: SqsCredentials): Promise<string> {
  const err = await auth.authenticate(await sdkSignedRequest(credentials)).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SqsAuthError);
  return (err as SqsAuthError).code;
}

/** Polls until `auth` refuses the credentials; answers how long that took. */
async function untilRefused(auth: SqsAuthenticator, credentials: SqsCredentials): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < 10_000) {
    try {
      await auth.authenticate(await sdkSignedRequest(credentials));
    } catch (err) {
      expect((err as SqsAuthError).code).toBe('InvalidClientTokenId');
      return Date.now() - start;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('still accepted after 10 s');
}

async function tableText(): Promise<string> {
  const items: unknown[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await t.runtime.clients.doc.send(
      new ScanCommand({ TableName: t.runtime.config.tableName, ExclusiveStartKey: start }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return JSON.stringify(items);
}

describe('SQS credentials', () => {
  it("are made with POST /keys, shown once, and sign requests as the key's principal with its scopes", async () => {
    const made = await t.api('/keys', {
      body: { name: 'sqs-worker', scopes: ['produce:jobs', 'consume:jobs'], sqs_credentials: true },
    });
    expect(made.status).toBe(201);
    const creds: SqsCredentials = made.body.sqs_credentials;
    expect(creds.access_key_id).toMatch(/^LQIA[A-Z2-7]{16}$/);
    expect(creds.secret_access_key).toHaveLength(40);
    expect(made.body.sqs_access_key_id).toBe(creds.access_key_id);

    const principal = await fresh().authenticate(await sdkSignedRequest(creds));
    expect(principal).toEqual({ name: 'sqs-worker', scopes: ['produce:jobs', 'consume:jobs'] });
    expect(hasScope(principal, 'produce', 'jobs')).toBe(true);
    expect(hasScope(principal, 'consume', 'ledger')).toBe(false);
    expect(hasScope(principal, 'admin', 'jobs')).toBe(false);
    // Any region the client is set to: leaseq has one, and signs nothing itself.
    await expect(
      fresh().authenticate(await sdkSignedRequest(creds, undefined, 'ap-southeast-2')),
    ).resolves.toEqual(principal);

    const listed = (await t.api('/keys')).body.keys.find((k: { name: string }) => k.name === 'sqs-worker');
    expect(listed.sqs_access_key_id).toBe(creds.access_key_id);

    // The secret is nowhere: not in the listing, not in any item of the table.
    expect(JSON.stringify((await t.api('/keys')).body)).not.toContain(creds.secret_access_key);
    const table = await tableText();
    expect(table).toContain(creds.access_key_id);
    expect(table).not.toContain(creds.secret_access_key);
    expect(table).not.toContain(adminCredentials().secret_access_key);
  });

  it('are made for an existing key, rotate (the old pair stops), and end with the key', async () => {
    const key = await t.api('/keys', { body: { name: 'sqs-rotating', scopes: ['consume:*'] } });
    expect(key.body.sqs_access_key_id).toBeNull();
    expect(key.body.sqs_credentials).toBeUndefined();

    const first = await t.api('/keys/sqs-rotating/sqs-credentials', { method: 'POST' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ name: 'sqs-rotating', created_at: expect.any(String) });
    const old: SqsCredentials = first.body.sqs_credentials;
    const warm = fresh();
    await expect(warm.authenticate(await sdkSignedRequest(old))).resolves.toMatchObject({
      name: 'sqs-rotating',
    });

    // A body, when sent, is an empty object.
    const second = await t.api('/keys/sqs-rotating/sqs-credentials', { body: {} });
    expect(second.status).toBe(201);
    const current: SqsCredentials = second.body.sqs_credentials;
    expect(current.access_key_id).not.toBe(old.access_key_id);
    await expect(fresh().authenticate(await sdkSignedRequest(current))).resolves.toMatchObject({
      name: 'sqs-rotating',
      scopes: ['consume:*'],
    });
    expect(await refusedAs(fresh(), old)).toBe('InvalidClientTokenId');
    // An instance that had the old pair cached stops taking it within its 5 s.
    expect(await untilRefused(warm, old)).toBeLessThan(6_000);
    const listed = (await t.api('/keys')).body.keys.find((k: { name: string }) => k.name === 'sqs-rotating');
    expect(listed.sqs_access_key_id).toBe(current.access_key_id);
    expect(await tableText()).not.toContain(old.access_key_id);

    // Revoked: the key's credentials end with it, for instances that had them cached too.
    await warm.authenticate(await sdkSignedRequest(current));
    expect((await t.api('/keys/sqs-rotating', { method: 'DELETE' })).status).toBe(204);
    expect(await refusedAs(fresh(), current)).toBe('InvalidClientTokenId');
    expect(await untilRefused(warm, current)).toBeLessThan(6_000);
    const revoked = (await t.api('/keys')).body.keys.find((k: { name: string }) => k.name === 'sqs-rotating');
    expect(revoked).toMatchObject({ revoked_at: expect.any(String), sqs_access_key_id: null });
    const again = await t.api('/keys/sqs-rotating/sqs-credentials', { method: 'POST' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('CONFLICT');
  }, 30_000);

  it('are refused for a key that does not exist, and to callers without admin:*', async () => {
    expect((await t.api('/keys/nobody/sqs-credentials', { method: 'POST' })).status).toBe(404);
    const bad = await t.api('/keys/bad name/sqs-credentials', { method: 'POST' });
    expect(bad.status).toBe(400);
    const extra = await t.api('/keys/nobody/sqs-credentials', { body: { rotate: true } });
    expect(extra.status).toBe(400);
    const queueAdmin = await t.api('/keys', { body: { name: 'jobs-admin-sqs', scopes: ['admin:jobs'] } });
    const denied = await t.api('/keys/jobs-admin-sqs/sqs-credentials', {
      method: 'POST',
      key: queueAdmin.body.key,
    });
    expect(denied.status).toBe(403);
    const selfMade = await t.api('/keys', {
      key: queueAdmin.body.key,
      body: { name: 'z', scopes: ['admin:jobs'], sqs_credentials: true },
    });
    expect(selfMade.status).toBe(403);
  });

  it("let the local admin sign with the runtime's own credentials, kept in the data folder", async () => {
    const admin = adminCredentials();
    await expect(fresh().authenticate(await sdkSignedRequest(admin))).resolves.toEqual({
      name: 'local-admin',
      scopes: ['produce:*', 'consume:*', 'admin:*'],
    });
    const file = join(t.dataDir, 'sqs-credentials.json');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(admin);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(t.dataDir, 'secrets.key')).mode & 0o777).toBe(0o600);
  });

  it('survive a restart: the same admin pair, and the sealed secrets still open', async () => {
    const made = await t.api('/keys', {
      body: { name: 'sqs-durable', scopes: ['produce:jobs'], sqs_credentials: true },
    });
    const admin = adminCredentials();
    await t.restart();
    expect(t.runtime.sqsCredentials).toEqual(admin);
    await expect(fresh().authenticate(await sdkSignedRequest(admin))).resolves.toMatchObject({
      name: 'local-admin',
    });
    await expect(
      fresh().authenticate(await sdkSignedRequest(made.body.sqs_credentials)),
    ).resolves.toMatchObject({
      name: 'sqs-durable',
    });
  }, 60_000);

  it('are refused with 409 SQS_CREDENTIALS_UNAVAILABLE where no secrets key is configured, and nothing is made', async () => {
    const { secrets: _, ...config } = t.runtime.config;
    const handler = createApiHandler(
      config,
      t.runtime.clients,
      new Logger({ serviceName: 'leaseq-api', logLevel: 'SILENT' }),
    );
    const sample: APIGatewayProxyEventV2 = JSON.parse(
      readFileSync(new URL('../../events/apigw/key-create-sqs.json', import.meta.url), 'utf8'),
    );
    const body = JSON.stringify({ name: 'no-secrets', scopes: ['produce:jobs'], sqs_credentials: true });
    const event: APIGatewayProxyEventV2 = {
      ...sample,
      headers: {
        ...sample.headers,
        authorization: `Bearer ${t.runtime.adminKey}`,
        'content-length': String(Buffer.byteLength(body)),
      },
      body,
    };
    const res = await handler(event, lambdaContext('api'));
    expect(res.statusCode).toBe(409);
    expect(JSON.parse(res.body ?? '').error.code).toBe('SQS_CREDENTIALS_UNAVAILABLE');
    const names = (await t.api('/keys')).body.keys.map((k: { name: string }) => k.name);
    expect(names).not.toContain('no-secrets');
    // Without the key flag the same deployment makes keys as before.
    const plainBody = JSON.stringify({ name: 'no-secrets', scopes: ['produce:jobs'] });
    const plain = await handler(
      {
        ...event,
        headers: { ...event.headers, 'content-length': String(Buffer.byteLength(plainBody)) },
        body: plainBody,
      },
      lambdaContext('api'),
    );
    expect(plain.statusCode).toBe(201);
  });
});

describe('a tenant file without "sqs_credentials": true', () => {
  it('has no secrets key and no admin credentials, and refuses to make any with a 409 naming the setting', async () => {
    const { sqs_credentials: _, ...tenant } = TEST_TENANT;
    const plain = await startTestRuntime({ ...tenant, tenant: 'no-sqs' });
    try {
      expect(plain.runtime.sqsCredentials).toBeUndefined();
      expect(plain.runtime.config.secrets).toBeUndefined();
      expect(existsSync(join(plain.dataDir, 'secrets.key'))).toBe(false);
      const res = await plain.api('/keys', {
        body: { name: 'sqs-worker', scopes: ['produce:jobs'], sqs_credentials: true },
      });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({
        code: 'SQS_CREDENTIALS_UNAVAILABLE',
        message: expect.stringContaining('"sqs_credentials": true'),
      });
      expect((await plain.api('/keys')).body.keys).toEqual([]);
    } finally {
      await plain.close();
    }
  });
});
