import { json, parseBody } from '../http.js';
import { queueRoute } from '../route.js';
import { produceRequestSchema } from '../schemas.js';

export const produceRoute = queueRoute('POST', '/queues/{queue}/messages', 'produce', async (req) => {
  const { messages } = parseBody(req.event, produceRequestSchema);
  const results = await req.services.producer.produce(req.queue.name, req.queue.config, messages);
  return json(200, { results });
});
