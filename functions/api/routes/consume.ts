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
  return json(200, { messages });
});

export const ackRoute = queueRoute('POST', '/queues/{queue}/ack', 'consume', async (req) => {
  const { receipts } = parseBody(req.event, ackRequestSchema);
  return json(200, { results: await req.services.consumer.ack(req.queue.name, req.queue.config, receipts) });
});

export const nackRoute = queueRoute('POST', '/queues/{queue}/nack', 'consume', async (req) => {
  const body = parseBody(req.event, nackRequestSchema);
  return json(200, await req.services.consumer.nack(req.queue.name, req.queue.config, body));
});

export const extendRoute = queueRoute('POST', '/queues/{queue}/extend', 'consume', async (req) => {
  const body = parseBody(req.event, extendRequestSchema);
  return json(200, await req.services.consumer.extend(req.queue.name, req.queue.config, body));
});
