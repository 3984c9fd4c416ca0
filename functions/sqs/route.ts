import type { Route } from '../api/route.js';

/**
 * The SQS-compatible endpoint's route (`POST /`). Its code (endpoint.ts, the actions, the
 * mapping) is a file of its own beside the api's bundle, loaded on the first SQS request
 * (infra/leaseq-function.ts): a tenant that never speaks SQS does not parse it at every cold start,
 * and the produce and receive path keeps its bundle. The errors both sides throw are known by
 * brand, not class (core/errors.ts isLeaseqError, sqs/errors.ts isSqsError).
 */

let loaded: Promise<typeof import('./endpoint.js')> | undefined;

export const sqsRoute: Route = {
  method: 'POST',
  path: '/',
  handler: async (event, services) => {
    loaded ??= import('./endpoint.js');
    return (await loaded).sqsEndpoint(event, services);
  },
};
