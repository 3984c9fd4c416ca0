/**
 * A token bucket: `rate` tokens a second, holding at most `burst`. Pure: the caller passes
 * the time. Used for rate quotas (requests and bytes a second) and to pace produce's log reads.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    readonly rate: number,
    readonly burst: number,
    now: number,
  ) {
    this.tokens = burst;
    this.at = now;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.burst, this.tokens + (this.rate * Math.max(0, now - this.at)) / 1000);
    this.at = Math.max(this.at, now);
  }

  /** Takes `n` tokens when there are enough; otherwise the seconds until there will be. */
  take(n: number, now: number): { ok: true } | { ok: false; retryAfterSeconds: number } {
    this.refill(now);
    if (n <= this.tokens) {
      this.tokens -= n;
      return { ok: true };
    }
    // A request bigger than the burst can never pass whole: it waits for a full bucket.
    const missing = Math.min(n, this.burst) - this.tokens;
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(missing / this.rate)) };
  }

  /** Spends tokens used elsewhere (other instances), possibly below zero. */
  drain(n: number, now: number): void {
    this.refill(now);
    this.tokens -= n;
  }

  /**
   * Spends `n` tokens now, possibly below zero, and returns the ms until the bucket has covered
   * them: a caller that waits that long before acting keeps to the rate.
   */
  reserve(n: number, now: number): number {
    this.drain(n, now);
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.rate;
  }
}
