import { byteDemands } from '../../access/limits.js';
import { countFor, recordDurations } from '../../observability/metrics.js';
import { json, parseBody } from '../http.js';
import { queueRoute } from '../route.js';
import {
  ackRequestSchema,
  extendRequestSchema,
  nackRequestSchema,
  receiveRequestSchema,
} from '../schemas.js';

export const receiveRoute = queueRoute('POST', '/queues/{queue}/receive', 'consume', async (req) => {
  const body = parseBody(req.event, receiveRequestSchema);
  const consumerId = body.consumer_id ?? req.principal.name;
  const messages = await req.services.consumer.receive(req.queue.name, req.queue.config, body, consumerId);
  // What was delivered counts against the byte quotas; the next receive waits for it.
  req.services.quotas.spend(byteDemands(req.demands, Buffer.byteLength(JSON.stringify(messages))));
  countFor(req.services.metrics, req.queue.name, {
    received: messages.length,
    redelivered: messages.filter((m) => m.attempt > 1).length,
  });
  return json(200, { messages });
});

export const ackRoute = queueRoute('POST', '/queues/{queue}/ack', 'consume', async (req) => {
  const { receipts } = parseBody(req.event, ackRequestSchema);
  const { results, heldSeconds } = await req.services.consumer.ack(
    req.queue.name,
    req.queue.config,
    receipts,
  );
  countFor(req.services.metrics, req.queue.name, {
    acked: results.filter((r) => r.status === 'acked').length,
    stale_receipts: results.filter((r) => r.status === 'stale_receipt').length,
  });
  recordDurations(req.services.metrics, req.queue.name, 'handler_seconds', heldSeconds);
  return json(200, { results });
});

export const nackRoute = queueRoute('POST', '/queues/{queue}/nack', 'consume', async (req) => {
  const body = parseBody(req.event, nackRequestSchema);
  const { answer, heldSeconds } = await req.services.consumer.nack(req.queue.name, req.queue.config, body);
  countFor(req.services.metrics, req.queue.name, {
    nacked: 1,
    dead_lettered: answer.status === 'dead_lettered' ? 1 : 0,
  });
  recordDurations(req.services.metrics, req.queue.name, 'handler_seconds', [heldSeconds]);
  return json(200, answer);
});

export const extendRoute = queueRoute('POST', '/queues/{queue}/extend', 'consume', async (req) => {
  const body = parseBody(req.event, extendRequestSchema);
  return json(200, await req.services.consumer.extend(req.queue.name, req.queue.config, body));
});
