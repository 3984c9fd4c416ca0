import type { Sample } from './history.js';

/**
 * What the tab keeps, in its sessionStorage: it lives as long as the tab, survives a reload, and
 * is gone when the tab closes. The pasted API key is not sent anywhere but in this origin's
 * Authorization headers; the plots' samples (console/history.ts) go with it when it is forgotten.
 */

const STORAGE_KEY = 'leaseq.apiKey';
const HISTORY = 'leaseq.history.';

export function storedKey(): string | undefined {
  return sessionStorage.getItem(STORAGE_KEY) ?? undefined;
}

export function storeKey(key: string): void {
  sessionStorage.setItem(STORAGE_KEY, key);
}

/** Forgets the key and what it saw. */
export function forgetKey(): void {
  sessionStorage.removeItem(STORAGE_KEY);
  forgetHistory();
}

/** Where a view's samples are kept: its queue, and its Lambda consumer if it names one. */
export function historyKey(queue: string, consumer?: string): string {
  return `${HISTORY}${queue}${consumer ? `?consumer=${consumer}` : ''}`;
}

/** The samples kept under `key`; none if there are none or they do not read as samples. */
export function loadHistory(key: string): Sample[] {
  try {
    const parsed: unknown = JSON.parse(sessionStorage.getItem(key) ?? '[]');
    return Array.isArray(parsed)
      ? parsed.filter((s): s is Sample => typeof s === 'object' && s !== null && typeof s.t === 'number')
      : [];
  } catch {
    return [];
  }
}

/**
 * Keeps `samples` under `key`. Over the storage's quota (about 5 MB an origin, some 40 queues'
 * hours), the other views' samples go first; failing still, the page draws from memory.
 */
export function saveHistory(key: string, samples: readonly Sample[]): void {
  const text = JSON.stringify(samples);
  try {
    sessionStorage.setItem(key, text);
  } catch {
    forgetHistory(key);
    try {
      sessionStorage.setItem(key, text);
    } catch {
      // Drawn from memory until the page is left.
    }
  }
}

/** Forgets every view's samples but `except`'s. */
function forgetHistory(except?: string): void {
  const keys: string[] = [];
  for (let i = 0; i < sessionStorage.length; i++) {
    const k = sessionStorage.key(i);
    if (k?.startsWith(HISTORY) && k !== except) keys.push(k);
  }
  for (const k of keys) sessionStorage.removeItem(k);
}
