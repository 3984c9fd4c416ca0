import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import {
  type GatewayThrottles,
  routeKeyOf,
  SHARED_ROUTE_KEYS,
  sharedRouteKeyOf,
} from '../../functions/core/gateway-throttles.js';
import { TokenBucket } from '../../functions/core/token-bucket.js';
import { toEvent } from './gateway-event.js';
import type { FromGateway, GatewayAnswer, ToGateway } from './http-gateway.js';

/**
 * API Gateway's part of the local runtime, on a thread of its own (started by http-gateway.ts):
 * it parses each request, refuses what the routes' throttles refuse, reads the body and sends the
 * event AWS would send to the api function on the runtime's thread. On AWS a refused request never
 * reaches the function; here a flood's parsing and refusals would otherwise queue every other
 * queue's requests behind them on the runtime's one thread.
 */

export interface GatewayThreadData {
  port: number;
  throttles?: GatewayThrottles;
}

/** API Gateway's own payload limit; leaseq's smaller limit is the handler's to enforce. */
const GATEWAY_MAX_BODY = 10 * 1024 * 1024;
/** API Gateway's own answer to a throttled request. */
const TOO_MANY_REQUESTS = JSON.stringify({ message: 'Too Many Requests' });

/**
 * API Gateway's throttles as the stack declares them (core/gateway-throttles.ts): a token bucket
 * per route, checked before the request's body is read or the handler runs, answered as API
 * Gateway answers (429, its own body, no Retry-After).
 */
class RouteBuckets {
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly queues: ReadonlySet<string>;

  constructor(throttles: GatewayThrottles) {
    const now = Date.now();
    this.queues = new Set(throttles.routes.map((r) => r.queue));
    for (const r of throttles.routes) this.buckets.set(r.routeKey, new TokenBucket(r.rate, r.burst, now));
    for (const key of SHARED_ROUTE_KEYS)
      this.buckets.set(key, new TokenBucket(throttles.others.rate, throttles.others.burst, now));
  }

  admits(method: string, path: string): boolean {
    const key = routeKeyOf(method, path, this.queues) ?? sharedRouteKeyOf(method, path);
    return this.buckets.get(key)?.take(1, Date.now()).ok ?? true;
  }
}

if (!parentPort) throw new Error('gateway-thread.ts runs as a worker thread (http-gateway.ts starts it)');
const port: MessagePort = parentPort;
const data = workerData as GatewayThreadData;
const buckets = data.throttles ? new RouteBuckets(data.throttles) : undefined;
/** Requests the api function has not answered yet, by the id their event went with. */
const waiting = new Map<number, (answer: GatewayAnswer) => void>();
let nextId = 0;

const server = createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
  if (buckets && !buckets.admits(req.method ?? 'GET', path)) {
    // Refused before anything is parsed: the body is let go, not read.
    req.resume();
    res.writeHead(429, { 'content-type': 'application/json' });
    res.end(TOO_MANY_REQUESTS);
    return;
  }
  serve(req, res).catch((err) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ message: `Internal Server Error: ${(err as Error).message}` }));
  });
});

async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req);
  if (body === undefined) {
    res.writeHead(413, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ message: 'Request Entity Too Large' }));
    return;
  }
  const id = nextId++;
  const answered = new Promise<GatewayAnswer>((resolve) => waiting.set(id, resolve));
  port.postMessage({ request: id, event: toEvent(req, body) } satisfies FromGateway);
  const answer = await answered;
  if ('error' in answer) throw new Error(answer.error);
  const result: APIGatewayProxyStructuredResultV2 = answer.result;
  const payload = result.isBase64Encoded
    ? Buffer.from(result.body ?? '', 'base64')
    : Buffer.from(result.body ?? '');
  res.writeHead(result.statusCode ?? 200, { ...(result.headers ?? {}) } as Record<string, string>);
  res.end(payload);
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > GATEWAY_MAX_BODY) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(tooLarge ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

port.on('message', (message: ToGateway) => {
  if (message === 'close') {
    server.close(() => port.postMessage('closed' satisfies FromGateway));
    server.closeAllConnections();
    return;
  }
  waiting.get(message.answer)?.(message);
  waiting.delete(message.answer);
});
server.listen(data.port, '127.0.0.1', () => {
  const { port: listening } = server.address() as AddressInfo;
  port.postMessage({ listening: `http://127.0.0.1:${listening}` } satisfies FromGateway);
});
