import { byteDemands, messageDemands } from '../access/limits.js';
import { slowHandlers } from '../observability/alarm-rules.js';
import { countFor, countProduced, recordDurations } from '../observability/metrics.js';
import type { ExtendRequest, NackRequest, ProduceMessage, ReceiveRequest } from '../wire/requests.js';
import type { DeliveredMessage, ProduceResult } from '../wire/responses.js';
import type { QueueRequest } from './route.js';

/**
 * The queue's calls with what each one counts, whichever protocol asked (this API's routes, or
 * the SQS endpoint): the service call, its metrics, and the bytes a receive spends afterwards.
 */

export async function produceMessages(
  req: QueueRequest,
  messages: readonly ProduceMessage[],
): Promise<ProduceResult[]> {
  const { principal, queue } = req;
  await req.services.quotas.admit(messageDemands(principal, queue.name, queue.config, messages.length));
  const results = await req.services.producer.produce(req.queue.name, req.queue.config, messages);
  const produced = results.filter((r) => r.status === 'accepted').length;
  const duplicate = results.filter((r) => r.status === 'duplicate').length;
  countProduced(req.services.metrics, req.queue.name, produced, duplicate);
  return results;
}

export async function receiveMessages(req: QueueRequest, body: ReceiveRequest): Promise<DeliveredMessage[]> {
  const consumerId = body.consumer_id ?? req.principal.name;
  // A receiver with a byte quota spends it per answer: the wake channel only wakes it.
  const handed = byteDemands(req.demands, 0).length === 0;
  const messages = await req.services.consumer.receive(
    req.queue.name,
    req.queue.config,
    body,
    consumerId,
    handed,
  );
  // What was delivered counts against the byte quotas; the next receive waits for it.
  req.services.quotas.spend(byteDemands(req.demands, Buffer.byteLength(JSON.stringify(messages))));
  countFor(req.services.metrics, req.queue.name, {
    received: messages.length,
    redelivered: messages.filter((m) => m.attempt > 1).length,
  });
  await req.services.counters.addHandling(req.queue.name, { delivered: messages.length });
  return messages;
}

export async function ackReceipts(req: QueueRequest, receipts: readonly string[]) {
  const { results, heldSeconds } = await req.services.consumer.ack(
    req.queue.name,
    req.queue.config,
    receipts,
  );
  countFor(req.services.metrics, req.queue.name, {
    acked: results.filter((r) => r.status === 'acked').length,
    stale_receipts: results.filter((r) => r.status === 'stale_receipt').length,
  });
  await recordHandling(req, heldSeconds);
  return results;
}

export async function nackReceipt(req: QueueRequest, body: NackRequest) {
  const { answer, heldSeconds } = await req.services.consumer.nack(req.queue.name, req.queue.config, body);
  countFor(req.services.metrics, req.queue.name, {
    nacked: 1,
    dead_lettered: answer.status === 'dead_lettered' ? 1 : 0,
  });
  await recordHandling(req, [heldSeconds]);
  return answer;
}

/** How long each delivery was held, as a metric and as the counts the handler-duration alarm reads. */
async function recordHandling(req: QueueRequest, heldSeconds: readonly number[]): Promise<void> {
  recordDurations(req.services.metrics, req.queue.name, 'handler_seconds', heldSeconds);
  await req.services.counters.addHandling(req.queue.name, {
    handled: heldSeconds.length,
    slow_handled: slowHandlers(heldSeconds, req.queue.config.lease_seconds),
  });
}

export function extendLease(req: QueueRequest, body: ExtendRequest) {
  return req.services.consumer.extend(req.queue.name, req.queue.config, body);
}
