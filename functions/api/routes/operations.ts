import { json, noContent, PARAM, parseBody, pathParam, validate } from '../http.js';
import { queueRoute } from '../route.js';
import { auditQuerySchema, dlqListQuerySchema, redriveRequestSchema, skipRequestSchema } from '../schemas.js';

export const dlqListRoute = queueRoute('GET', '/queues/{queue}/dlq', 'admin', async (req) => {
  const query = validate(dlqListQuerySchema, req.event.queryStringParameters ?? {});
  return json(
    200,
    await req.services.operations.dlqList(req.queue.name, req.queue.config, query.limit, query.cursor),
  );
});

export const dlqGetRoute = queueRoute('GET', '/queues/{queue}/dlq/{message_id}', 'admin', async (req) => {
  const id = pathParam(req.event, 'message_id', PARAM.messageId);
  return json(200, await req.services.operations.dlqGet(req.queue.name, req.queue.config, id));
});

export const dlqPurgeRoute = queueRoute(
  'DELETE',
  '/queues/{queue}/dlq/{message_id}',
  'admin',
  async (req) => {
    const id = pathParam(req.event, 'message_id', PARAM.messageId);
    await req.services.operations.dlqPurge(req.queue.name, req.queue.config, id, req.principal.name);
    return noContent();
  },
);

export const redriveRoute = queueRoute('POST', '/queues/{queue}/redrive', 'admin', async (req) => {
  const body = parseBody(req.event, redriveRequestSchema);
  return json(202, await req.services.redrives.start(req.queue.name, body, req.principal.name));
});

export const redriveGetRoute = queueRoute(
  'GET',
  '/queues/{queue}/redrives/{redrive_id}',
  'admin',
  async (req) =>
    json(
      200,
      await req.services.redrives.get(req.queue.name, pathParam(req.event, 'redrive_id', PARAM.redriveId)),
    ),
);

export const redriveCancelRoute = queueRoute(
  'DELETE',
  '/queues/{queue}/redrives/{redrive_id}',
  'admin',
  async (req) =>
    json(
      200,
      await req.services.redrives.cancel(
        req.queue.name,
        pathParam(req.event, 'redrive_id', PARAM.redriveId),
        req.principal.name,
      ),
    ),
);

export const parkedKeysRoute = queueRoute('GET', '/queues/{queue}/keys/parked', 'admin', async (req) =>
  json(200, { keys: await req.services.operations.parkedKeys(req.queue.name) }),
);

export const skipKeyRoute = queueRoute('POST', '/queues/{queue}/keys/{key}/skip', 'admin', async (req) => {
  const { reason } = parseBody(req.event, skipRequestSchema);
  const key = pathParam(req.event, 'key', PARAM.key);
  return json(200, await req.services.operations.skipKey(req.queue.name, key, reason, req.principal.name));
});

export const auditRoute = queueRoute('GET', '/queues/{queue}/audit', 'admin', async (req) => {
  const { limit } = validate(auditQuerySchema, req.event.queryStringParameters ?? {});
  return json(200, { entries: await req.services.operations.auditTrail(req.queue.name, limit) });
});

export const traceRoute = queueRoute('GET', '/queues/{queue}/messages/{message_id}', 'admin', async (req) =>
  json(
    200,
    await req.services.tracer.trace(req.queue.name, pathParam(req.event, 'message_id', PARAM.messageId)),
  ),
);

export const statsRoute = queueRoute('GET', '/queues/{queue}/stats', 'admin', async (req) =>
  json(200, await req.services.operations.stats(req.queue.name, req.queue.config)),
);
