import { bearerToken, hashApiKey, type KeyRing, type Principal } from '../core/auth.js';
import { UnauthenticatedError } from '../core/errors.js';
import type { ApiKeyStore } from '../store/api-keys.js';

/**
 * Who a request is: keys fixed in configuration first, then keys made at run time, looked up
 * by hash and cached briefly per instance — so a revocation takes effect within `ttlMs`.
 */

interface Cached {
  principal: Principal | undefined;
  until: number;
}

const MAX_CACHED = 10_000;

export class Authenticator {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly ring: KeyRing,
    private readonly store: ApiKeyStore,
    private readonly ttlMs = 5_000,
    private readonly now: () => number = Date.now,
  ) {}

  async authenticate(authorization: string | undefined): Promise<Principal> {
    const hash = hashApiKey(bearerToken(authorization));
    const fixed = this.ring.find(hash);
    if (fixed) return fixed;
    const principal = await this.lookup(hash);
    if (!principal) throw new UnauthenticatedError('unknown or revoked API key');
    return principal;
  }

  private async lookup(hash: string): Promise<Principal | undefined> {
    const now = this.now();
    const hit = this.cache.get(hash);
    if (hit && hit.until > now) return hit.principal;
    const stored = await this.store.byHash(hash);
    const principal =
      stored && stored.revoked_at === undefined
        ? {
            name: stored.name,
            scopes: stored.scopes,
            ...(stored.rate_limits ? { limits: stored.rate_limits } : {}),
          }
        : undefined;
    // A flood of unknown keys must not grow the cache without bound.
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    this.cache.set(hash, { principal, until: now + this.ttlMs });
    return principal;
  }
}
