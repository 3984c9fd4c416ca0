import type * as z from 'zod/mini';
import type { ErrorIssue } from './errors.js';

/** zod issues as the API reports them (docs/contract.md, "Authentication and errors"): one per problem, each with its JSON path. */

export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${String(p)}` : String(p)),
    '',
  );
}

export function issuesOf(error: z.core.$ZodError, rootLabel: string): ErrorIssue[] {
  return error.issues.flatMap((i) =>
    // One issue per unknown key, at the key's own path.
    i.code === 'unrecognized_keys'
      ? i.keys.map((k) => ({ path: formatPath([...i.path, k]), message: 'unknown key' }))
      : [{ path: formatPath(i.path) || rootLabel, message: i.message }],
  );
}
