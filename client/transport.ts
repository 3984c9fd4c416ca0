import { apiErrorOf, LeaseqNetworkError } from './errors.js';

/** One HTTP exchange with the API: auth header, JSON body, timeout, typed errors. */

export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  fetch: typeof fetch;
  /** A request without an answer by then counts as a network failure. */
  timeoutMs: number;
}

export interface SendOptions {
  body?: unknown;
  signal?: AbortSignal | undefined;
  /** Added to the timeout for requests the server holds on purpose (long polling). */
  extraTimeoutMs?: number;
}

export class Transport {
  private readonly baseUrl: string;

  constructor(private readonly options: TransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
  }

  /** Sends once; answers the parsed 2xx body or throws a LeaseqApiError / LeaseqNetworkError. */
  async send<T>(method: 'GET' | 'POST' | 'DELETE', path: string, init: SendOptions = {}): Promise<T> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs + (init.extraTimeoutMs ?? 0));
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}` };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    let status: number;
    let text: string;
    let retryAfter: string | null;
    try {
      const res = await this.options.fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
        signal,
      });
      status = res.status;
      retryAfter = res.headers.get('retry-after');
      text = await res.text();
    } catch (err) {
      // The caller's own abort is not a failure of the network: it must not be retried.
      if (init.signal?.aborted) throw init.signal.reason;
      const why = timeout.aborted ? 'timed out' : ((err as Error).message ?? String(err));
      throw new LeaseqNetworkError(`${method} ${path}: ${why}`, { cause: err });
    }
    if (status >= 200 && status < 300) return (text ? JSON.parse(text) : undefined) as T;
    throw apiErrorOf(status, text, retryAfter);
  }
}
