import { json, pathParam, validate } from '../http.js';
import { queueRoute } from '../route.js';
import { dlqListQuerySchema } from '../schemas.js';

export const dlqListRoute = queueRoute('GET', '/queues/{queue}/dlq', 'admin', async (req) => {
  const query = validate(dlqListQuerySchema, req.event.queryStringParameters ?? {});
  return json(
    200,
    await req.services.operations.dlqList(req.queue.name, req.queue.config, query.limit, query.cursor),
  );
});

export const dlqGetRoute = queueRoute('GET', '/queues/{queue}/dlq/{message_id}', 'admin', async (req) => {
  const id = pathParam(req.event, 'message_id');
  return json(200, await req.services.operations.dlqGet(req.queue.name, req.queue.config, id));
});

export const statsRoute = queueRoute('GET', '/queues/{queue}/stats', 'admin', async (req) =>
  json(200, await req.services.operations.stats(req.queue.name)),
);
