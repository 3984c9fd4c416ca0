import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import type { ChannelEvent, ChannelResult } from '../../functions/api/channel.js';
import { headersOf } from './gateway-event.js';

/**
 * Plays API Gateway's WebSocket API for the wake channel (docs/wake-channel.md): `$connect`,
 * `$default` (its answer sent back on the connection, as the route's response) and `$disconnect`
 * become the events AWS sends the api function, and `POST /@connections/{id}` is the stage's
 * management API (PostToConnection; 410 for a connection that is gone), reached over HTTP by
 * whichever instance admits, as on AWS; `DELETE` closes a connection (DeleteConnection).
 */

export type ChannelHandler = (event: ChannelEvent) => Promise<ChannelResult>;

export interface ChannelGateway {
  /** Where clients connect: `ws://127.0.0.1:<port>`. */
  url: string;
  /** The management endpoint admissions post to (RuntimeConfig.channelEndpoint). */
  endpoint: string;
  /** Connections open now. */
  readonly connections: number;
  close(): Promise<void>;
}

/** API Gateway's own limit on a frame, either way. */
const MAX_FRAME_BYTES = 128 * 1024;

/** `handler` is asked for at each event: the runtime builds the api function after this starts. */
export async function startChannelGateway(handler: () => ChannelHandler, port = 0): Promise<ChannelGateway> {
  const sockets = new Map<string, WebSocket>();
  const server: Server = createServer((req, res) => {
    const match = /^\/@connections\/([^/]+)$/.exec(new URL(req.url ?? '/', 'http://127.0.0.1').pathname);
    if ((req.method !== 'POST' && req.method !== 'DELETE') || !match) {
      req.resume();
      res.writeHead(404).end();
      return;
    }
    const socket = sockets.get(decodeURIComponent(match[1] as string));
    if (req.method === 'DELETE') {
      // DeleteConnection: API Gateway closes the connection (as it does after 2 hours).
      req.resume();
      socket?.close(1001);
      res.writeHead(socket ? 204 : 410).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (!socket) {
        res.writeHead(410, { 'content-type': 'application/json' }).end('{"message":"GoneException"}');
        return;
      }
      socket.send(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200).end();
    });
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });
  server.on('upgrade', (req, socket, head) => {
    const connectionId = randomBytes(12).toString('base64');
    handler()(event(connectionId, 'CONNECT', '$connect', req))
      .then((result) => {
        if ((result.statusCode ?? 500) >= 300) {
          socket.end(`HTTP/1.1 ${result.statusCode} Refused\r\nConnection: close\r\n\r\n`);
          return;
        }
        wss.handleUpgrade(req, socket, head, (ws) => {
          sockets.set(connectionId, ws);
          ws.on('message', (data) => {
            handler()(event(connectionId, 'MESSAGE', '$default', undefined, data.toString()))
              .then((answer) => {
                if (answer.body !== undefined && ws.readyState === ws.OPEN) ws.send(answer.body);
              })
              .catch(() => ws.close(1011));
          });
          ws.on('close', () => {
            sockets.delete(connectionId);
            void handler()(event(connectionId, 'DISCONNECT', '$disconnect')).catch(() => {});
          });
        });
      })
      .catch(() => socket.end('HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\n'));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${bound}`,
    endpoint: `http://127.0.0.1:${bound}`,
    get connections() {
      return sockets.size;
    },
    close: () =>
      new Promise((resolve) => {
        for (const ws of sockets.values()) ws.terminate();
        wss.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function event(
  connectionId: string,
  eventType: ChannelEvent['requestContext']['eventType'],
  routeKey: string,
  req?: IncomingMessage,
  body?: string,
): ChannelEvent {
  const now = Date.now();
  return {
    requestContext: {
      routeKey,
      messageId: randomUUID(),
      eventType,
      extendedRequestId: randomUUID(),
      requestTime: new Date(now).toISOString(),
      messageDirection: 'IN',
      stage: 'live',
      connectedAt: now,
      requestTimeEpoch: now,
      requestId: randomUUID(),
      domainName: '127.0.0.1',
      connectionId,
      apiId: 'local-channel',
    },
    isBase64Encoded: false,
    ...(req ? { headers: headersOf(req) } : {}),
    ...(body !== undefined ? { body } : {}),
  };
}
