import { LeaseqClient } from '../client/client.js';
import {
  ForbiddenError,
  LeaseqApiError,
  LeaseqNetworkError,
  UnauthenticatedError,
} from '../client/errors.js';
import { h } from './dom.js';

/** The console calls the HTTP API as any client does: leaseq/client, under the pasted key. */

/** The API that served this page: its address less `console`, so a base path is kept. */
const API_URL = new URL('.', location.href).href;

export function clientFor(key: string): LeaseqClient {
  // One retry, not the SDK's five: a person waits, and a refusal is better shown than retried.
  return new LeaseqClient({ baseUrl: API_URL, apiKey: key, maxRetries: 1, timeoutMs: 15_000 });
}

/** What went wrong, in a sentence for the person at the page (`doing`: "see the dead letters of jobs"). */
export function explain(error: unknown, doing: string): string {
  if (error instanceof ForbiddenError) {
    const scope = error.details?.required_scope;
    const needs =
      typeof scope === 'string' ? ` It needs the scope ${scope} (or ${scope.split(':')[0]}:*).` : '';
    return `This key may not ${doing}.${needs}`;
  }
  if (error instanceof UnauthenticatedError)
    return 'The API does not know this key: it may be mistyped or revoked.';
  if (error instanceof LeaseqApiError) return `Could not ${doing}: ${error.message} (${error.code}).`;
  if (error instanceof LeaseqNetworkError) return `The API did not answer, so could not ${doing}. Try again.`;
  return `Could not ${doing}: ${error instanceof Error ? error.message : String(error)}.`;
}

/** A refusal or failure shown in place of what was asked for; a 403 is a notice, not an error. */
export function notice(error: unknown, doing: string): HTMLElement {
  const refused = error instanceof ForbiddenError;
  return h(
    'p',
    { class: refused ? 'notice refused' : 'notice failed', role: 'status' },
    explain(error, doing),
  );
}
