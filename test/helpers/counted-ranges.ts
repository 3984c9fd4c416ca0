import type { DocumentClient } from '../../functions/aws/dynamodb.js';
import { RangeStore } from '../../functions/store/ranges.js';

/**
 * A real RangeStore that counts the calls made to it by name (not its calls to itself): what a
 * test says a path no longer reads.
 */
export function countedRanges(doc: DocumentClient, table: string) {
  const calls = new Map<string, number>();
  const store = new RangeStore(doc, table);
  const counted = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.set(String(name), (calls.get(String(name)) ?? 0) + 1);
        return value.apply(target, args);
      };
    },
  });
  return {
    store: counted,
    /** Calls of `method` since the last reset. */
    calls: (method: keyof RangeStore) => calls.get(method) ?? 0,
    /** Calls of any method since the last reset. */
    total: () => [...calls.values()].reduce((n, c) => n + c, 0),
    reset: () => calls.clear(),
  };
}
