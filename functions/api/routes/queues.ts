import { type Action, hasScope } from '../../core/auth.js';
import { header, json } from '../http.js';
import type { Route } from '../route.js';

const ACTIONS: readonly Action[] = ['produce', 'consume', 'admin'];

/**
 * The queues a key may use, each with what it may do there, so a tool (the console) can list
 * them without knowing the tenant file. Any known key may ask; a queue it has no scope on is left
 * out, so the answer tells a key no more than its scopes already name (`*` names every queue).
 */
export const listQueuesRoute: Route = {
  method: 'GET',
  path: '/queues',
  handler: async (event, services) => {
    const principal = await services.auth.authenticate(header(event, 'authorization'));
    const queues = Object.entries(services.config.tenant.queues).flatMap(([name, q]) => {
      const actions = ACTIONS.filter((action) => hasScope(principal, action, name));
      if (!actions.length) return [];
      return [
        {
          name,
          ordered: q.ordered,
          shards: q.shards,
          // As on the operations routes, a queue's consumers are told only to its admins.
          consumers: actions.includes('admin') ? q.consumers.map((c) => c.name) : [],
          actions,
        },
      ];
    });
    return json(200, { queues });
  },
};
