import { createKeySchema, createSqsCredentialsSchema } from '../../wire/requests.js';
import { json, noContent, PARAM, parseBody, pathParam } from '../http.js';
import { tenantRoute } from '../route.js';

export const createKeyRoute = tenantRoute('POST', '/keys', async (req) => {
  const { name, scopes, rate_limits, sqs_credentials } = parseBody(req.event, createKeySchema);
  return json(
    201,
    await req.services.keyAdmin.create(name, scopes, req.principal.name, rate_limits, {
      sqsCredentials: sqs_credentials,
    }),
  );
});

export const listKeysRoute = tenantRoute('GET', '/keys', async (req) =>
  json(200, { keys: await req.services.keyAdmin.list() }),
);

export const revokeKeyRoute = tenantRoute('DELETE', '/keys/{name}', async (req) => {
  await req.services.keyAdmin.revoke(pathParam(req.event, 'name', PARAM.keyName));
  return noContent();
});

/** Makes SQS credentials for a run-time key, or new ones in place of its old (which stop working). */
export const createSqsCredentialsRoute = tenantRoute('POST', '/keys/{name}/sqs-credentials', async (req) => {
  const name = pathParam(req.event, 'name', PARAM.keyName);
  if (req.event.body) parseBody(req.event, createSqsCredentialsSchema);
  return json(201, await req.services.keyAdmin.createSqsCredentials(name, req.principal.name));
});
