import { countFor } from '../../observability/metrics.js';
import { json, parseBody } from '../http.js';
import { queueRoute } from '../route.js';
import { produceRequestSchema } from '../schemas.js';

export const produceRoute = queueRoute('POST', '/queues/{queue}/messages', 'produce', async (req) => {
  const { messages } = parseBody(req.event, produceRequestSchema);
  const results = await req.services.producer.produce(req.queue.name, req.queue.config, messages);
  countFor(req.services.metrics, req.queue.name, {
    produced: results.filter((r) => r.status === 'accepted').length,
    duplicate: results.filter((r) => r.status === 'duplicate').length,
  });
  return json(200, { results });
});
