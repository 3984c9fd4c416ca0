import type { APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import type { Authenticator } from '../access/authenticator.js';
import { InvalidRequestError } from '../core/errors.js';
import { issuesOf } from '../core/validation.js';
import { type ChannelFrame, channelRequestSchema } from '../wire/channel.js';
import { errorResponse, header } from './http.js';

/**
 * The wake channel's routes on API Gateway's WebSocket API (docs/wake-channel.md): `$connect`
 * takes a connection whose `Authorization` carries a valid API key (any key: a connection only
 * hears of the queues its receives registered for, and a receive checks its scope);
 * `$default` answers `hello` with the connection's id and `ping` with `pong`. Nothing is stored
 * per connection: a receive registers it with the queue, and a wake to a closed one is refused
 * by API Gateway (410) and forgotten.
 */

/** A WebSocket event; `$connect`'s carries the upgrade request's headers. */
export type ChannelEvent = APIGatewayProxyWebsocketEventV2 & {
  headers?: Record<string, string | undefined>;
};

export interface ChannelResult {
  statusCode: number;
  /** Sent back on the connection (the `$default` route's response). */
  body?: string;
}

export function isChannelEvent(event: object): event is ChannelEvent {
  return 'requestContext' in event && 'eventType' in (event.requestContext as object);
}

export function createChannelHandler(auth: Pick<Authenticator, 'authenticate'>) {
  return async (event: ChannelEvent): Promise<ChannelResult> => {
    const { eventType, connectionId } = event.requestContext;
    if (eventType === 'DISCONNECT') return { statusCode: 200 };
    try {
      if (eventType === 'CONNECT') {
        await auth.authenticate(header(event, 'authorization'));
        return { statusCode: 200 };
      }
      const request = parseRequest(event.body);
      return frame(
        request.action === 'hello' ? { type: 'hello', connection_id: connectionId } : { type: 'pong' },
      );
    } catch (err) {
      const { response, code, message } = errorResponse(err);
      if (eventType === 'CONNECT') return { statusCode: response.statusCode ?? 500 };
      return frame({ type: 'error', code, message }, response.statusCode);
    }
  };
}

function parseRequest(body: string | undefined) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body ?? '');
  } catch {
    throw new InvalidRequestError('a frame is JSON: {"action":"hello"} or {"action":"ping"}');
  }
  const result = channelRequestSchema.safeParse(parsed);
  if (!result.success)
    throw new InvalidRequestError(
      'a frame is {"action":"hello"} or {"action":"ping"}',
      issuesOf(result.error, '(frame)'),
    );
  return result.data;
}

function frame(f: ChannelFrame, statusCode = 200): ChannelResult {
  return { statusCode, body: JSON.stringify(f) };
}
