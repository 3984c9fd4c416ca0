import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import {
  type GatewayThrottles,
  routeKeyOf,
  SHARED_ROUTE_KEYS,
  sharedRouteKeyOf,
} from '../../functions/core/gateway-throttles.js';
import { TokenBucket } from '../../functions/core/token-bucket.js';
import { lambdaContext } from './lambda-context.js';

/**
 * Plays API Gateway (HTTP API, payload format 2.0) in front of the api function: each
 * request becomes the event AWS would send, and the handler's result becomes the response.
 */

export type HttpHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** API Gateway's own payload limit; leaseq's smaller limit is the handler's to enforce. */
const GATEWAY_MAX_BODY = 10 * 1024 * 1024;
/** API Gateway's own answer to a throttled request. */
const TOO_MANY_REQUESTS = JSON.stringify({ message: 'Too Many Requests' });
const TEXT_TYPES = /^(application\/(json|.*\+json|x-www-form-urlencoded|xml)|text\/)/i;

export interface Gateway {
  url: string;
  close(): Promise<void>;
}

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

export async function startGateway(
  handler: HttpHandler,
  port: number,
  throttles?: GatewayThrottles,
): Promise<Gateway> {
  const buckets = throttles ? new RouteBuckets(throttles) : undefined;
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    if (buckets && !buckets.admits(req.method ?? 'GET', path)) {
      // Refused before anything is parsed: the body is let go, not read.
      req.resume();
      res.writeHead(429, { 'content-type': 'application/json' });
      res.end(TOO_MANY_REQUESTS);
      return;
    }
    serve(handler, req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `Internal Server Error: ${(err as Error).message}` }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function serve(handler: HttpHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req);
  if (body === undefined) {
    res.writeHead(413, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ message: 'Request Entity Too Large' }));
    return;
  }
  const event = toEvent(req, body);
  const result = await handler(event, lambdaContext('api'));
  const headers = { ...(result.headers ?? {}) } as Record<string, string>;
  const payload = result.isBase64Encoded
    ? Buffer.from(result.body ?? '', 'base64')
    : Buffer.from(result.body ?? '');
  res.writeHead(result.statusCode ?? 200, headers);
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

/** A request's headers as API Gateway passes them: names lowercased, repeated values joined. */
export function headersOf(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  return headers;
}

function toEvent(req: IncomingMessage, body: Buffer): APIGatewayProxyEventV2 {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const headers = headersOf(req);
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = k in query ? `${query[k]},${v}` : v;
  const contentType = headers['content-type'] ?? '';
  const isText = body.byteLength === 0 || TEXT_TYPES.test(contentType);
  const now = new Date();
  const method = req.method ?? 'GET';
  // The routes the tenant stack declares: `GET /health` and `ANY /{proxy+}`.
  const health = method === 'GET' && url.pathname === '/health';
  const routeKey = health ? 'GET /health' : 'ANY /{proxy+}';
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    ...(Object.keys(query).length ? { queryStringParameters: query } : {}),
    ...(health ? {} : { pathParameters: { proxy: url.pathname.slice(1) } }),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? '127.0.0.1',
      domainPrefix: 'local',
      http: {
        method,
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: apiGatewayTime(now),
      timeEpoch: now.getTime(),
    },
    ...(body.byteLength
      ? { body: isText ? body.toString('utf8') : body.toString('base64'), isBase64Encoded: !isText }
      : { isBase64Encoded: false }),
  };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** API Gateway's request time format: `29/Nov/2026:20:15:06 +0000`. */
function apiGatewayTime(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(
    d.getUTCMinutes(),
  )}:${pad(d.getUTCSeconds())} +0000`;
}
