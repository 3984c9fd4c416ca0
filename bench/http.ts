import { performance } from 'node:perf_hooks';

/** The bench's HTTP client of leaseq's API (fetch, the path a real client takes), and its tally. */

export interface Endpoint {
  url: string;
  key: string;
  /** Counts every request made through this endpoint (API Gateway requests and api Lambda invocations). */
  tally?: ApiTally;
  /** The wake channel workers wait on instead of long polls (--as-aws, as the Worker does when given one). */
  channelUrl?: string;
}

/** HTTP requests the workload made, by route, and how long each took at the client. */
export class ApiTally {
  requests: Record<string, number> = {};
  /** Summed wall time of the requests: what the api function would be billed for, long polls included. */
  seconds = 0;
  emptyReceives = 0;
  readonly latenciesMs: Record<string, number[]> = {};

  record(route: string, ms: number): void {
    this.requests[route] = (this.requests[route] ?? 0) + 1;
    this.seconds += ms / 1000;
    const latencies = this.latenciesMs[route] ?? [];
    latencies.push(ms);
    this.latenciesMs[route] = latencies;
  }

  get total(): number {
    return Object.values(this.requests).reduce((a, b) => a + b, 0);
  }

  snapshot(): ApiTallySnapshot {
    return {
      requests: { ...this.requests },
      total: this.total,
      seconds: this.seconds,
      emptyReceives: this.emptyReceives,
    };
  }
}

export interface ApiTallySnapshot {
  requests: Record<string, number>;
  total: number;
  seconds: number;
  emptyReceives: number;
}

/** A workload request answered other than 200: the run fails with it, unless its caller retries. */
export class AnsweredError extends Error {
  constructor(
    message: string,
    readonly status: number,
    /** Retry-After in seconds, where the answer gave one. */
    readonly retryAfter: number | undefined,
  ) {
    super(message);
  }
}

/** Far above a receive's 1 s long poll or a 500-message produce on a loaded machine. */
const REQUEST_TIMEOUT_MS = 30_000;

/** POST of a workload route, tallied under the path's last segment (`produce` for `/messages`). */
export async function post<T>(api: Endpoint, path: string, body: unknown): Promise<T> {
  const startedAt = performance.now();
  const res = await fetch(`${api.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    // A request that never answers must fail the run, not hang it.
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  const route = path.endsWith('/messages') ? 'produce' : path.slice(path.lastIndexOf('/') + 1);
  api.tally?.record(route, performance.now() - startedAt);
  // A benchmark that silently counts errors as throughput would measure the wrong thing.
  if (res.status !== 200) {
    const retryAfter = res.headers.get('retry-after');
    throw new AnsweredError(
      `POST ${path} answered ${res.status}: ${text}`,
      res.status,
      retryAfter === null ? undefined : Number(retryAfter),
    );
  }
  return JSON.parse(text) as T;
}

/** GET of an admin route (stats); not counted in the tally: the bench's own look, not the workload. */
export async function getJson<T>(api: Endpoint, path: string): Promise<T> {
  const res = await fetch(`${api.url}${path}`, {
    headers: { authorization: `Bearer ${api.key}` },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}
