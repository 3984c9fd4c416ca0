import { json } from '../http.js';
import type { Route } from '../route.js';

export const healthRoute: Route = {
  method: 'GET',
  path: '/health',
  handler: async () => json(200, { status: 'ok' }),
};
