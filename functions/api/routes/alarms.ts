import { requireScope } from '../../core/auth.js';
import { header, json } from '../http.js';
import type { Route } from '../route.js';

/** The queues' alarms above their threshold now (operations/alarms.ts): every queue's, so `admin:*`. */
export const alarmsRoute: Route = {
  method: 'GET',
  path: '/alarms',
  handler: async (event, services) => {
    const principal = await services.auth.authenticate(header(event, 'authorization'));
    requireScope(principal, 'admin', '*');
    return json(200, await services.alarms.list());
  },
};
