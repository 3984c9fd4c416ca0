import { json, noContent, PARAM, parseBody, pathParam, validate } from '../http.js';
import { operationsRoute, queueRoute } from '../route.js';
import {
  auditQuerySchema,
  dlqListQuerySchema,
  pauseRequestSchema,
  redriveMatchingRequestSchema,
  redriveRequestSchema,
  replayRequestSchema,
  resumeRequestSchema,
  skipRequestSchema,
} from '../schemas.js';

/** Every route here but the audit trail takes `?consumer=` (operationsRoute). */

export const dlqListRoute = operationsRoute('GET', '/queues/{queue}/dlq', async (req) => {
  const query = validate(dlqListQuerySchema, req.event.queryStringParameters ?? {});
  return json(
    200,
    await req.services.operations.dlqList(req.state, req.queue.config, query.limit, query.cursor),
  );
});

export const dlqErrorsRoute = operationsRoute('GET', '/queues/{queue}/dlq-errors', async (req) =>
  json(200, await req.services.deadLetterErrors.groups(req.state, req.queue.config)),
);

export const dlqGetRoute = operationsRoute('GET', '/queues/{queue}/dlq/{message_id}', async (req) => {
  const id = pathParam(req.event, 'message_id', PARAM.messageId);
  return json(200, await req.services.operations.dlqGet(req.state, req.queue.config, id));
});

export const dlqPurgeRoute = operationsRoute('DELETE', '/queues/{queue}/dlq/{message_id}', async (req) => {
  const id = pathParam(req.event, 'message_id', PARAM.messageId);
  await req.services.operations.dlqPurge(req.state, req.queue.config, id, req.principal.name);
  return noContent();
});

export const redriveRoute = operationsRoute('POST', '/queues/{queue}/redrive', async (req) => {
  const body = parseBody(req.event, redriveRequestSchema);
  return json(202, await req.services.redrives.start(req.state, body, req.principal.name));
});

export const redriveMatchingRoute = operationsRoute(
  'POST',
  '/queues/{queue}/redrive/matching',
  async (req) => {
    const { filter } = parseBody(req.event, redriveMatchingRequestSchema);
    return json(200, { matching: await req.services.redrives.matching(req.state, filter) });
  },
);

export const redriveGetRoute = operationsRoute('GET', '/queues/{queue}/redrives/{redrive_id}', async (req) =>
  json(200, await req.services.redrives.get(req.state, pathParam(req.event, 'redrive_id', PARAM.redriveId))),
);

export const redriveCancelRoute = operationsRoute(
  'DELETE',
  '/queues/{queue}/redrives/{redrive_id}',
  async (req) =>
    json(
      200,
      await req.services.redrives.cancel(
        req.state,
        pathParam(req.event, 'redrive_id', PARAM.redriveId),
        req.principal.name,
      ),
    ),
);

export const replayRoute = operationsRoute('POST', '/queues/{queue}/replay', async (req) => {
  const body = parseBody(req.event, replayRequestSchema);
  return json(202, await req.services.replays.start(req.state, req.queue.config, body, req.principal.name));
});

export const replayGetRoute = operationsRoute('GET', '/queues/{queue}/replays/{replay_id}', async (req) =>
  json(200, await req.services.replays.get(req.state, pathParam(req.event, 'replay_id', PARAM.replayId))),
);

export const replayCancelRoute = operationsRoute(
  'DELETE',
  '/queues/{queue}/replays/{replay_id}',
  async (req) =>
    json(
      200,
      await req.services.replays.cancel(
        req.state,
        pathParam(req.event, 'replay_id', PARAM.replayId),
        req.principal.name,
      ),
    ),
);

export const parkedKeysRoute = operationsRoute('GET', '/queues/{queue}/keys/parked', async (req) =>
  json(200, { keys: await req.services.operations.parkedKeys(req.state) }),
);

export const skipKeyRoute = operationsRoute('POST', '/queues/{queue}/keys/{key}/skip', async (req) => {
  const { reason } = parseBody(req.event, skipRequestSchema);
  const key = pathParam(req.event, 'key', PARAM.key);
  return json(200, await req.services.operations.skipKey(req.state, key, reason, req.principal.name));
});

/** Deliveries of the queue, all its consumers' included, stop until resumed; produce goes on. */
export const pauseRoute = queueRoute('POST', '/queues/{queue}/pause', 'admin', async (req) => {
  const { reason } = parseBody(req.event, pauseRequestSchema);
  return json(200, {
    paused: await req.services.operations.pause(req.queue.name, reason, req.principal.name),
  });
});

export const resumeRoute = queueRoute('POST', '/queues/{queue}/resume', 'admin', async (req) => {
  const { reason } = req.event.body ? parseBody(req.event, resumeRequestSchema) : { reason: undefined };
  return json(200, await req.services.operations.resume(req.queue.name, reason, req.principal.name));
});

export const auditRoute = queueRoute('GET', '/queues/{queue}/audit', 'admin', async (req) => {
  const { limit } = validate(auditQuerySchema, req.event.queryStringParameters ?? {});
  return json(200, { entries: await req.services.operations.auditTrail(req.queue.name, limit) });
});

export const traceRoute = operationsRoute('GET', '/queues/{queue}/messages/{message_id}', async (req) =>
  json(200, await req.services.tracer.trace(req.state, pathParam(req.event, 'message_id', PARAM.messageId))),
);

export const statsRoute = operationsRoute('GET', '/queues/{queue}/stats', async (req) =>
  json(
    200,
    req.consumer === undefined
      ? await req.services.operations.stats(req.state, req.queue.config)
      : await req.services.operations.consumerStats(req.state),
  ),
);
