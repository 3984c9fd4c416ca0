import { json, noContent, PARAM, parseBody, pathParam } from '../http.js';
import { tenantRoute } from '../route.js';
import { createKeySchema } from '../schemas.js';

export const createKeyRoute = tenantRoute('POST', '/keys', async (req) => {
  const { name, scopes, rate_limits } = parseBody(req.event, createKeySchema);
  return json(201, await req.services.keyAdmin.create(name, scopes, req.principal.name, rate_limits));
});

export const listKeysRoute = tenantRoute('GET', '/keys', async (req) =>
  json(200, { keys: await req.services.keyAdmin.list() }),
);

export const revokeKeyRoute = tenantRoute('DELETE', '/keys/{name}', async (req) => {
  await req.services.keyAdmin.revoke(pathParam(req.event, 'name', PARAM.keyName));
  return noContent();
});
