/**
 * A count over the last second, from two one-second buckets, the older one weighed by how much of
 * it the last second still covers (the sliding-window counter): constant memory per shard.
 */
export class RecentRate {
  private bucket = 0;
  private current = 0;
  private previous = 0;

  add(n: number, now: number): number {
    const bucket = Math.floor(now / 1000);
    if (bucket !== this.bucket) {
      this.previous = bucket === this.bucket + 1 ? this.current : 0;
      this.current = 0;
      this.bucket = bucket;
    }
    this.current += n;
    return this.current + this.previous * (1 - (now % 1000) / 1000);
  }
}
