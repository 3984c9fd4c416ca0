import { createHash } from 'node:crypto';
import { ForbiddenError, UnauthenticatedError } from './errors.js';

/** API keys and scopes (docs/contract.md, "Authentication and errors"): `produce|consume|admin:<queue|*>`. */

export type Action = 'produce' | 'consume' | 'admin';

export { SCOPE, SCOPE_MESSAGE } from '../wire/fields.js';

export interface Principal {
  name: string;
  scopes: readonly string[];
  /** The key's own rate quotas, beside the queue's. */
  limits?: KeyLimits;
}

/** Requests and bytes a second, per action (the tenant file's `rate_limits`). */
export interface KeyLimits {
  produce?: { requests_per_sec?: number; bytes_per_sec?: number };
  consume?: { requests_per_sec?: number; bytes_per_sec?: number };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function hasScope(principal: Principal, action: Action, queue: string): boolean {
  return principal.scopes.includes(`${action}:${queue}`) || principal.scopes.includes(`${action}:*`);
}

export function requireScope(principal: Principal, action: Action, queue: string): void {
  if (!hasScope(principal, action, queue)) throw new ForbiddenError(`${action}:${queue}`);
}

/** Reads the bearer token from an Authorization header value. */
export function bearerToken(header: string | undefined): string {
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!match?.[1]) throw new UnauthenticatedError();
  return match[1];
}

/** Key hash → principal, for the keys fixed in configuration. Built once per function instance. */
export class KeyRing {
  private readonly byHash: Map<string, Principal>;
  private readonly byName = new Map<string, Principal>();

  constructor(
    keys: readonly { sha256: string; name: string; scopes: readonly string[]; rate_limits?: KeyLimits }[],
  ) {
    this.byHash = new Map(
      keys.map((k) => [
        k.sha256,
        { name: k.name, scopes: k.scopes, ...(k.rate_limits ? { limits: k.rate_limits } : {}) },
      ]),
    );
    // The first of a name wins, as the tenant file's keys come before any extra key.
    for (const p of this.byHash.values()) if (!this.byName.has(p.name)) this.byName.set(p.name, p);
  }

  find(sha256: string): Principal | undefined {
    return this.byHash.get(sha256);
  }

  /** A configured key by its name: what SQS credentials made for it act as. */
  findByName(name: string): Principal | undefined {
    return this.byName.get(name);
  }

  authenticate(authorization: string | undefined): Principal {
    const principal = this.find(hashApiKey(bearerToken(authorization)));
    if (!principal) throw new UnauthenticatedError('unknown API key');
    return principal;
  }
}
