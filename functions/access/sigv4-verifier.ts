import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import type { KeyRing, Principal } from '../core/auth.js';
import { SqsAuthError } from '../sqs/errors.js';
import type { ApiKeyStore } from '../store/api-keys.js';
import type { SqsCredentialStore } from '../store/sqs-credentials.js';
import { SealedSecretError, type SecretBox } from './secret-box.js';
import { ACCESS_KEY_ID } from './sqs-credentials.js';

/**
 * Who an SQS-compatible request is: it is signed with AWS Signature Version 4 (as every AWS SDK
 * signs) by credentials leaseq made for an API key, and it is that key's principal. The signature
 * is computed again with @smithy/signature-v4 — the signer the SDKs themselves use, so the
 * canonical request is built the same way to the byte — over exactly the headers the request says
 * it signed, and compared in constant time. Scopes are the caller's to check.
 */

export interface SignedRequest {
  method: string;
  /** The path as it arrived (API Gateway's `rawPath`), still percent-encoded as on the wire. */
  path: string;
  /** The query parameters, decoded (API Gateway's `queryStringParameters`). */
  query: Record<string, string>;
  /** Any case; API Gateway v2 delivers them lower-cased, repeated ones joined with commas. */
  headers: Record<string, string | undefined>;
  /** The body as sent: text, or the bytes of a base64-encoded event body. */
  body: string | Uint8Array;
}

export interface SqsAuthenticatorDeps {
  /** The keys of the configuration (tenant file, local admin), found by name. */
  ring: KeyRing;
  /** Keys made at run time, found by name. */
  apiKeys: Pick<ApiKeyStore, 'byName'>;
  credentials: Pick<SqsCredentialStore, 'get'>;
  /** Opens the stored secrets; undefined when the deployment has none (no credentials work then). */
  box: SecretBox | undefined;
  /**
   * How long a set of credentials and its key's principal are trusted once read: a revocation
   * or a rotation takes effect within this. The bearer keys' Authenticator uses the same 5 s.
   */
  ttlMs?: number;
  /** How long a secret stays opened in memory, so KMS Decrypt is once per this per access key id. */
  secretTtlMs?: number;
  /** How far the signing time may be from this server's clock, either way (AWS: 15 minutes). */
  maxSkewMs?: number;
  now?: () => number;
}

export const SIGNED_SERVICE = 'sqs';
export const MAX_SKEW_MS = 15 * 60_000;
const MAX_CACHED = 10_000;

const ALGORITHM = 'AWS4-HMAC-SHA256';
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;
const CONTENT_SHA256 = 'x-amz-content-sha256';

const MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your AWS ' +
  'Secret Access Key and signing method. Consult the service documentation for details.';
const INVALID_TOKEN = 'The security token included in the request is invalid.';

interface Found {
  principal: Principal;
  sealed: string;
}

export class SqsAuthenticator {
  private readonly found = new Map<string, { value: Found | undefined; until: number }>();
  private readonly secrets = new Map<string, { sealed: string; secret: string; until: number }>();
  private readonly ttlMs: number;
  private readonly secretTtlMs: number;
  private readonly maxSkewMs: number;
  private readonly now: () => number;

  constructor(private readonly deps: SqsAuthenticatorDeps) {
    this.ttlMs = deps.ttlMs ?? 5_000;
    this.secretTtlMs = deps.secretTtlMs ?? 5 * 60_000;
    this.maxSkewMs = deps.maxSkewMs ?? MAX_SKEW_MS;
    this.now = deps.now ?? Date.now;
  }

  async authenticate(request: SignedRequest): Promise<Principal> {
    const headers = lowerCased(request.headers);
    const auth = parseAuthorization(headers.authorization);
    const signingTime = this.checkDate(headers, auth);
    // Shaped like none of ours: refused without a read.
    if (!ACCESS_KEY_ID.test(auth.accessKeyId)) throw new SqsAuthError('InvalidClientTokenId', INVALID_TOKEN);
    const found = await this.lookup(auth.accessKeyId);
    if (!found) throw new SqsAuthError('InvalidClientTokenId', INVALID_TOKEN);
    const secret = await this.secret(auth.accessKeyId, found.sealed);

    const signed: Record<string, string> = {};
    for (const name of auth.signedHeaders) {
      const value = headers[name];
      if (value === undefined)
        throw new SqsAuthError(
          'SignatureDoesNotMatch',
          `The header ${name} is signed but not in the request.`,
        );
      signed[name] = value;
    }
    // The signer takes a signed content hash as the payload's hash without looking at the body:
    // it must be the body's, or the body would not be covered by the signature at all.
    if (signed[CONTENT_SHA256] !== undefined && signed[CONTENT_SHA256] !== sha256Hex(request.body)) {
      throw new SqsAuthError(
        'SignatureDoesNotMatch',
        `The ${CONTENT_SHA256} header does not match the SHA-256 of the request body.`,
      );
    }
    const signer = new SignatureV4({
      service: auth.service,
      region: auth.region,
      credentials: { accessKeyId: auth.accessKeyId, secretAccessKey: secret },
      sha256: Sha256,
      uriEscapePath: true,
      // Adds no x-amz-content-sha256 of its own: only what the client signed is signed here.
      applyChecksum: false,
    });
    const expected = await signer.sign(
      {
        method: request.method.toUpperCase(),
        protocol: 'https:',
        hostname: signed.host ?? '',
        path: request.path,
        query: { ...request.query },
        headers: signed,
        body: request.body,
      },
      {
        signingDate: new Date(signingTime),
        signingRegion: auth.region,
        signingService: auth.service,
        // Headers the signer would leave out by default (user-agent…) are signed if the client did.
        signableHeaders: new Set(auth.signedHeaders),
      },
    );
    const ours = /Signature=([0-9a-f]{64})$/.exec(String(expected.headers.authorization))?.[1];
    if (!ours) throw new Error('SignatureV4 made no signature');
    // Constant time: how long a comparison takes must not tell how much of a guess was right.
    if (!timingSafeEqual(Buffer.from(ours, 'hex'), Buffer.from(auth.signature, 'hex')))
      throw new SqsAuthError('SignatureDoesNotMatch', MISMATCH);
    return found.principal;
  }

  /** The signing time, checked against the credential scope and this server's clock. */
  private checkDate(headers: Record<string, string>, auth: ParsedAuthorization): number {
    const amzDate = headers['x-amz-date'];
    const m = amzDate ? AMZ_DATE.exec(amzDate) : null;
    if (!amzDate || !m || !auth.signedHeaders.includes('x-amz-date'))
      throw new SqsAuthError(
        'SignatureDoesNotMatch',
        'A signed X-Amz-Date header (yyyyMMddTHHmmssZ) is required.',
      );
    const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
    const time = Date.UTC(y, mo - 1, d, h, mi, s);
    if (Number.isNaN(time) || formatAmzDate(time) !== amzDate)
      throw new SqsAuthError('SignatureDoesNotMatch', `X-Amz-Date ${amzDate} is not a valid time.`);
    if (auth.date !== amzDate.slice(0, 8)) {
      throw new SqsAuthError(
        'SignatureDoesNotMatch',
        `Credential should be scoped to a valid date: '${auth.date}' != '${amzDate.slice(0, 8)}'.`,
      );
    }
    const now = this.now();
    const minutes = Math.round(this.maxSkewMs / 60_000);
    if (time < now - this.maxSkewMs) {
      throw new SqsAuthError(
        'SignatureDoesNotMatch',
        `Signature expired: ${amzDate} is now earlier than ${formatAmzDate(now - this.maxSkewMs)} ` +
          `(${formatAmzDate(now)} - ${minutes} min.)`,
      );
    }
    if (time > now + this.maxSkewMs) {
      throw new SqsAuthError(
        'SignatureDoesNotMatch',
        `Signature expired: ${amzDate} is still later than ${formatAmzDate(now + this.maxSkewMs)} ` +
          `(${formatAmzDate(now)} + ${minutes} min.): the signature is not yet current`,
      );
    }
    return time;
  }

  /** The credentials and their key's principal, read again every `ttlMs`. */
  private async lookup(accessKeyId: string): Promise<Found | undefined> {
    const now = this.now();
    const hit = this.found.get(accessKeyId);
    if (hit && hit.until > now) return hit.value;
    const item = await this.deps.credentials.get(accessKeyId);
    let value: Found | undefined;
    if (item) {
      const principal =
        item.key_kind === 'fixed'
          ? this.deps.ring.findByName(item.key_name)
          : await this.runtimePrincipal(item.key_name);
      if (principal) value = { principal, sealed: item.sealed_secret };
    }
    // A flood of unknown ids must not grow the cache without bound.
    if (this.found.size >= MAX_CACHED) this.found.clear();
    this.found.set(accessKeyId, { value, until: now + this.ttlMs });
    return value;
  }

  private async runtimePrincipal(name: string): Promise<Principal | undefined> {
    const key = await this.deps.apiKeys.byName(name);
    if (!key || key.revoked_at !== undefined) return undefined;
    return { name: key.name, scopes: key.scopes, ...(key.rate_limits ? { limits: key.rate_limits } : {}) };
  }

  /** The secret in the clear, opened once per `secretTtlMs` (a KMS Decrypt on AWS). */
  private async secret(accessKeyId: string, sealed: string): Promise<string> {
    const now = this.now();
    const hit = this.secrets.get(accessKeyId);
    if (hit && hit.sealed === sealed && hit.until > now) return hit.secret;
    if (!this.deps.box)
      throw new SqsAuthError('InvalidClientTokenId', `${INVALID_TOKEN} (no secrets key here)`);
    let secret: string;
    try {
      secret = await this.deps.box.open(sealed);
    } catch (err) {
      if (err instanceof SealedSecretError) {
        throw new SqsAuthError(
          'InvalidClientTokenId',
          `${INVALID_TOKEN} (its secret no longer opens: the secrets key changed; make new credentials)`,
        );
      }
      throw err;
    }
    if (this.secrets.size >= MAX_CACHED) this.secrets.clear();
    this.secrets.set(accessKeyId, { sealed, secret, until: now + this.secretTtlMs });
    return secret;
  }
}

interface ParsedAuthorization {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
}

/** `AWS4-HMAC-SHA256 Credential=<id>/<date>/<region>/<service>/aws4_request, SignedHeaders=a;b, Signature=<hex>`. */
export function parseAuthorization(header: string | undefined): ParsedAuthorization {
  const value = header?.trim();
  if (!value?.startsWith(`${ALGORITHM} `)) {
    throw new SqsAuthError(
      'MissingAuthenticationToken',
      `Request is missing Authentication Token: sign it with AWS Signature Version 4 (${ALGORITHM}).`,
    );
  }
  const fields = new Map<string, string>();
  for (const part of value.slice(ALGORITHM.length).split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const malformed = (why: string) =>
    new SqsAuthError('SignatureDoesNotMatch', `The Authorization header is malformed: ${why}.`);
  const credential = fields.get('Credential');
  const signedHeaders = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (!credential) throw malformed("it requires a 'Credential' parameter");
  if (!signedHeaders) throw malformed("it requires a 'SignedHeaders' parameter");
  if (!signature) throw malformed("it requires a 'Signature' parameter");
  const scope = credential.split('/');
  const [accessKeyId, date, region, service, terminator] = scope;
  if (scope.length !== 5 || !accessKeyId || !date || !region || !service || terminator !== 'aws4_request')
    throw malformed('the Credential is <access key id>/<yyyymmdd>/<region>/<service>/aws4_request');
  if (!/^\d{8}$/.test(date)) throw malformed('the Credential date is yyyymmdd');
  if (!/^[a-z0-9-]{1,64}$/.test(region)) throw malformed('the Credential region is not a region name');
  if (service !== SIGNED_SERVICE) {
    throw new SqsAuthError(
      'SignatureDoesNotMatch',
      `Credential should be scoped to correct service: '${SIGNED_SERVICE}'.`,
    );
  }
  const names = signedHeaders.split(';');
  if (!names.every((n) => HEADER_NAME.test(n)))
    throw malformed('SignedHeaders are lower-case header names joined by ;');
  if (!names.includes('host')) throw malformed("'Host' must be a signed header");
  if (!/^[0-9a-f]{64}$/.test(signature)) throw malformed('the Signature is 64 lower-case hex digits');
  return { accessKeyId, date, region, service, signedHeaders: names, signature };
}

function lowerCased(headers: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    // Two spellings of one header are one header of two values, as HTTP joins them.
    out[lower] = out[lower] === undefined ? value : `${out[lower]},${value}`;
  }
  return out;
}

function formatAmzDate(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '');
}

function sha256Hex(body: string | Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

type SourceData = string | ArrayBuffer | ArrayBufferView;

/** SHA-256 and HMAC-SHA256 from node:crypto, in the shape SignatureV4 takes (the SDK's own is the same on Node). */
class Sha256 {
  private hash: ReturnType<typeof createHash> | ReturnType<typeof createHmac>;

  constructor(private readonly secret?: SourceData) {
    this.hash = this.make();
  }

  update(chunk: Uint8Array): void {
    this.hash.update(chunk);
  }

  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }

  reset(): void {
    this.hash = this.make();
  }

  private make() {
    const secret = this.secret;
    if (secret === undefined) return createHash('sha256');
    const key =
      typeof secret === 'string'
        ? Buffer.from(secret, 'utf8')
        : ArrayBuffer.isView(secret)
          ? Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength)
          : Buffer.from(secret);
    return createHmac('sha256', key);
  }
}
