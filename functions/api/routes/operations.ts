import type * as z from 'zod/mini';
import type { JobControls } from '../../operations/job-runner.js';
import {
  auditQuerySchema,
  dlqListQuerySchema,
  pauseRequestSchema,
  redriveMatchingRequestSchema,
  redriveRequestSchema,
  replayRequestSchema,
  resumeRequestSchema,
  retentionRequestSchema,
  skipRequestSchema,
} from '../../wire/requests.js';
import { json, noContent, PARAM, parseBody, pathParam, validate } from '../http.js';
import { type ApiServices, type OperationsRequest, operationsRoute, queueRoute } from '../route.js';

/** Every route here but the audit trail takes `?consumer=` (operationsRoute). */

export const dlqListRoute = operationsRoute('GET', '/queues/{queue}/dlq', async (req) => {
  const query = validate(dlqListQuerySchema, req.event.queryStringParameters ?? {});
  return json(
    200,
    await req.services.deadLetters.list(req.state, req.queue.config, query.limit, query.cursor),
  );
});

export const dlqErrorsRoute = operationsRoute('GET', '/queues/{queue}/dlq-errors', async (req) =>
  json(200, await req.services.deadLetterErrors.groups(req.state, req.queue.config)),
);

export const dlqGetRoute = operationsRoute('GET', '/queues/{queue}/dlq/{message_id}', async (req) => {
  const id = pathParam(req.event, 'message_id', PARAM.messageId);
  return json(200, await req.services.deadLetters.get(req.state, req.queue.config, id));
});

export const dlqPurgeRoute = operationsRoute('DELETE', '/queues/{queue}/dlq/{message_id}', async (req) => {
  const id = pathParam(req.event, 'message_id', PARAM.messageId);
  await req.services.deadLetters.purge(req.state, req.queue.config, id, req.principal.name);
  return noContent();
});

/**
 * A kind of operator's job (JobRunner): POST starts one (202), GET on its id answers its
 * progress, DELETE cancels it.
 */
function jobRoutes<R>(
  noun: 'redrive' | 'replay' | 'retention',
  schema: z.ZodMiniType<R>,
  jobs: (services: ApiServices) => JobControls<R>,
) {
  const path = `/queues/{queue}/${noun}s/{${noun}_id}`;
  const id = (req: OperationsRequest) => pathParam(req.event, `${noun}_id`, PARAM[`${noun}Id`]);
  return {
    start: operationsRoute('POST', `/queues/{queue}/${noun}`, async (req) => {
      const body = parseBody(req.event, schema);
      return json(202, await jobs(req.services).start(req.state, req.queue.config, body, req.principal.name));
    }),
    get: operationsRoute('GET', path, async (req) =>
      json(200, await jobs(req.services).get(req.state, id(req))),
    ),
    cancel: operationsRoute('DELETE', path, async (req) =>
      json(200, await jobs(req.services).cancel(req.state, id(req), req.principal.name)),
    ),
  };
}

const redrives = jobRoutes('redrive', redriveRequestSchema, (services) => services.redrives);
export const redriveRoute = redrives.start;
export const redriveGetRoute = redrives.get;
export const redriveCancelRoute = redrives.cancel;

export const redriveMatchingRoute = operationsRoute(
  'POST',
  '/queues/{queue}/redrive/matching',
  async (req) => {
    const { filter } = parseBody(req.event, redriveMatchingRequestSchema);
    return json(200, { matching: await req.services.redrives.matching(req.state, filter) });
  },
);

const replays = jobRoutes('replay', replayRequestSchema, (services) => services.replays);
export const replayRoute = replays.start;
export const replayGetRoute = replays.get;
export const replayCancelRoute = replays.cancel;

const retentions = jobRoutes('retention', retentionRequestSchema, (services) => services.retentions);
export const retentionRoute = retentions.start;
export const retentionGetRoute = retentions.get;
export const retentionCancelRoute = retentions.cancel;

export const parkedKeysRoute = operationsRoute('GET', '/queues/{queue}/keys/parked', async (req) =>
  json(200, { keys: await req.services.parkedKeys.list(req.state) }),
);

export const skipKeyRoute = operationsRoute('POST', '/queues/{queue}/keys/{key}/skip', async (req) => {
  const { reason } = parseBody(req.event, skipRequestSchema);
  const key = pathParam(req.event, 'key', PARAM.key);
  return json(200, await req.services.parkedKeys.skip(req.state, key, reason, req.principal.name));
});

/** Deliveries of the queue, all its consumers' included, stop until resumed; produce goes on. */
export const pauseRoute = queueRoute('POST', '/queues/{queue}/pause', 'admin', async (req) => {
  const { reason } = parseBody(req.event, pauseRequestSchema);
  return json(200, {
    paused: await req.services.queueAdmin.pause(req.queue.name, reason, req.principal.name),
  });
});

export const resumeRoute = queueRoute('POST', '/queues/{queue}/resume', 'admin', async (req) => {
  const { reason } = req.event.body ? parseBody(req.event, resumeRequestSchema) : { reason: undefined };
  return json(200, await req.services.queueAdmin.resume(req.queue.name, reason, req.principal.name));
});

export const auditRoute = queueRoute('GET', '/queues/{queue}/audit', 'admin', async (req) => {
  const { limit } = validate(auditQuerySchema, req.event.queryStringParameters ?? {});
  return json(200, { entries: await req.services.queueAdmin.auditTrail(req.queue.name, limit) });
});

export const traceRoute = operationsRoute('GET', '/queues/{queue}/messages/{message_id}', async (req) =>
  json(200, await req.services.trace.trace(req.state, pathParam(req.event, 'message_id', PARAM.messageId))),
);

export const statsRoute = operationsRoute('GET', '/queues/{queue}/stats', async (req) =>
  json(
    200,
    req.consumer === undefined
      ? await req.services.stats.queue(req.state, req.queue.config)
      : await req.services.stats.consumer(req.state),
  ),
);
