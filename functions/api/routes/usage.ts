import { requireScope } from '../../core/auth.js';
import { QueueNotFoundError } from '../../core/errors.js';
import { usageRange } from '../../core/usage-range.js';
import { usageQuerySchema } from '../../wire/requests.js';
import { header, json, validate } from '../http.js';
import type { Route } from '../route.js';

/**
 * What queues used over a range, for chargeback: every queue's with `admin:*`, one queue's with
 * `admin:<queue>` and `?queue=`. The range is checked here (400 INVALID_RANGE), the figures are
 * computed by a file loaded on first ask (operations/usage.ts).
 */
export const usageRoute: Route = {
  method: 'GET',
  path: '/usage',
  handler: async (event, services) => {
    const principal = await services.auth.authenticate(header(event, 'authorization'));
    const { queues } = services.config.tenant;
    // As on a queue's own routes: an unknown queue is 404, then the scope (403), then the input.
    const queue = event.queryStringParameters?.queue;
    if (queue !== undefined && !Object.hasOwn(queues, queue)) throw new QueueNotFoundError(queue);
    requireScope(principal, 'admin', queue ?? '*');
    const query = validate(usageQuerySchema, event.queryStringParameters ?? {});
    const range = usageRange(query.from, query.to, Date.now());
    return json(200, await services.usage.report(queue ? [queue] : Object.keys(queues), range));
  },
};
