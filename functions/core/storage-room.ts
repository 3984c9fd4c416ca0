/**
 * The storage quota without a read per produce request: a queue read at under half its quota
 * has room for this instance's produce for the next second, while that stays within the other
 * half. What other instances produce meanwhile is seen at the next read: the quota can be passed
 * by at most a second of their traffic, against a default quota of hours of it (storageQuotaBytes).
 * Near the quota every request reads, so a full queue is refused as before.
 */

/** How long a read at under half the quota stands. */
export const ROOM_TRUSTED_MS = 1000;

export class StorageRoom {
  private readonly room = new Map<string, { until: number; left: number }>();

  /** True when `bytes` fit in the room a recent read left; they are taken from it. */
  take(queue: string, bytes: number, now: number): boolean {
    const r = this.room.get(queue);
    if (!r || r.until <= now || r.left < bytes) return false;
    r.left -= bytes;
    return true;
  }

  /** What a read found: `used` bytes of `quota`. */
  read(queue: string, used: number, quota: number, now: number): void {
    const left = quota / 2 - used;
    if (left > 0) this.room.set(queue, { until: now + ROOM_TRUSTED_MS, left });
    else this.room.delete(queue);
  }
}
