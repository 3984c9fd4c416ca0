import { describe, expect, it } from 'vitest';
import { ROOM_TRUSTED_MS, StorageRoom } from '../../functions/core/storage-room.js';

describe('storage room', () => {
  it('has no room before a read', () => {
    expect(new StorageRoom().take('q', 1, 0)).toBe(false);
  });

  it('trusts a read under half the quota for the bytes up to half, for a second', () => {
    const room = new StorageRoom();
    room.read('q', 100, 1000, 0);
    expect(room.take('q', 300, 10)).toBe(true);
    expect(room.take('q', 101, 20)).toBe(false);
    expect(room.take('q', 100, 30)).toBe(true);
    expect(room.take('q', 1, 40)).toBe(false);
    room.read('q', 0, 1000, 50);
    expect(room.take('q', 1, 50 + ROOM_TRUSTED_MS)).toBe(false);
    expect(room.take('q', 1, 49 + ROOM_TRUSTED_MS)).toBe(true);
  });

  it('gives no room from a read at half the quota or more, and forgets an earlier one', () => {
    const room = new StorageRoom();
    room.read('q', 0, 1000, 0);
    room.read('q', 500, 1000, 1);
    expect(room.take('q', 1, 2)).toBe(false);
  });

  it('keeps queues apart', () => {
    const room = new StorageRoom();
    room.read('a', 0, 1000, 0);
    expect(room.take('b', 1, 0)).toBe(false);
    expect(room.take('a', 1, 0)).toBe(true);
  });
});
