import { InvalidRequestError } from '../../core/errors.js';
import { produceRequestSchema, traceparentSchema } from '../../wire/requests.js';
import { json, parseBody } from '../http.js';
import { produceMessages } from '../queue-calls.js';
import { queueRoute } from '../route.js';

export const produceRoute = queueRoute(
  'POST',
  '/queues/{queue}/messages',
  'produce',
  async (req) => {
    const { messages } = parseBody(req.event, produceRequestSchema);
    const traceparent = traceparentHeader(req.event.headers?.traceparent);
    const results = await produceMessages(
      req,
      traceparent ? messages.map((m) => ({ traceparent, ...m })) : messages,
    );
    return json(200, { results });
  },
  'produce',
);

/** The request's `traceparent` header: the trace context of its messages that carry none. */
function traceparentHeader(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const parsed = traceparentSchema.safeParse(value.trim());
  if (parsed.success) return parsed.data;
  throw new InvalidRequestError('the traceparent header is not a W3C trace context', [
    { path: 'headers.traceparent', message: parsed.error.issues[0]?.message ?? 'invalid' },
  ]);
}
