/**
 * The pasted API key, kept in sessionStorage: it lives as long as the tab, is not sent anywhere
 * but in this origin's Authorization headers, and is gone when the tab closes.
 */

const STORAGE_KEY = 'leaseq.apiKey';

export function storedKey(): string | undefined {
  return sessionStorage.getItem(STORAGE_KEY) ?? undefined;
}

export function storeKey(key: string): void {
  sessionStorage.setItem(STORAGE_KEY, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}
