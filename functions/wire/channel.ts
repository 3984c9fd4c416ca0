import * as z from 'zod/mini';
import type { DeliveredMessage } from './responses.js';

/**
 * The wake channel's frames (docs/wake-channel.md): a WebSocket on which a Worker learns, within
 * milliseconds and from any function instance, that a queue it waits on admitted new messages. The
 * server reads the client's frames with these; the client takes the types.
 */

/** A connection id as API Gateway makes them (base64-like), or as the local runtime does. */
export const CONNECTION_ID = /^[A-Za-z0-9+/=_-]{1,128}$/;

/** What a client sends: `hello` asks for its connection id; `ping` keeps an idle connection open. */
export const channelRequestSchema = z.lazy(() => z.strictObject({ action: z.enum(['hello', 'ping']) }));
export type ChannelRequest = z.infer<typeof channelRequestSchema>;

/** What the server sends: the answer to `hello` or `ping`, a wake, or a refused frame. */
export type ChannelFrame =
  | { type: 'hello'; connection_id: string }
  | { type: 'pong' }
  /**
   * The queue admitted messages after this connection's receive registered for it; `messages` are
   * what the admission leased to it, as that receive would have answered them.
   */
  | { type: 'admitted'; queue: string; messages?: DeliveredMessage[] }
  | { type: 'error'; code: string; message: string };
