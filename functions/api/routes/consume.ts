import {
  ackRequestSchema,
  cancelReceiveSchema,
  extendRequestSchema,
  nackRequestSchema,
  receiveRequestSchema,
} from '../../wire/requests.js';
import { json, noContent, parseBody } from '../http.js';
import { ackReceipts, extendLease, nackReceipt, receiveMessages } from '../queue-calls.js';
import { queueRoute } from '../route.js';

export const receiveRoute = queueRoute(
  'POST',
  '/queues/{queue}/receive',
  'consume',
  async (req) =>
    json(200, { messages: await receiveMessages(req, parseBody(req.event, receiveRequestSchema)) }),
  'receive',
);

export const cancelReceiveRoute = queueRoute(
  'POST',
  '/queues/{queue}/receive/cancel',
  'consume',
  async (req) => {
    await req.services.consumer.cancelPoll(req.queue.name, parseBody(req.event, cancelReceiveSchema).poll_id);
    return noContent();
  },
);

export const ackRoute = queueRoute(
  'POST',
  '/queues/{queue}/ack',
  'consume',
  async (req) =>
    json(200, { results: await ackReceipts(req, parseBody(req.event, ackRequestSchema).receipts) }),
  'ack',
);

export const nackRoute = queueRoute(
  'POST',
  '/queues/{queue}/nack',
  'consume',
  async (req) => json(200, await nackReceipt(req, parseBody(req.event, nackRequestSchema))),
  'nack',
);

export const extendRoute = queueRoute(
  'POST',
  '/queues/{queue}/extend',
  'consume',
  async (req) => json(200, await extendLease(req, parseBody(req.event, extendRequestSchema))),
  'extend',
);
