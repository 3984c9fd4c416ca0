import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, parseTenantConfig } from '../../functions/core/config.js';
import { checkPayloadSchemas } from '../../functions/core/payload-schema.js';
import { loadTenantFile } from '../../infra/tenant-file.js';

const dir = mkdtempSync(join(tmpdir(), 'leaseq-tenant-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function tenantFile(name: string, queues: Record<string, unknown>): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify({ tenant: 'acme', queues }));
  return path;
}

describe('a tenant file with schema files', () => {
  it('puts each schema file (relative to the tenant file) in its queue, ready to compile', () => {
    mkdirSync(join(dir, 'schemas'), { recursive: true });
    const schema = { type: 'object', required: ['amount'], properties: { amount: { type: 'number' } } };
    writeFileSync(join(dir, 'schemas', 'orders.json'), JSON.stringify(schema));
    const path = tenantFile('acme.json', {
      orders: { schema: 'schemas/orders.json', schema_ref: 'v1' },
      jobs: {},
    });
    const config = parseTenantConfig(loadTenantFile(path));
    expect(config.queues.orders?.schema).toEqual(schema);
    expect(config.queues.jobs?.schema).toBeUndefined();
    expect(() => checkPayloadSchemas(config)).not.toThrow();
  });

  it('names the queue and the file when a schema file is missing or not JSON, in a ConfigError', () => {
    const missing = tenantFile('missing.json', { orders: { schema: 'schemas/nope.json' } });
    expect(() => loadTenantFile(missing, 'tenants/missing.json')).toThrow(
      new ConfigError('tenants/missing.json: queues.orders.schema (schemas/nope.json): not found', []),
    );
    writeFileSync(join(dir, 'schemas', 'broken.json'), '{"type": ');
    const broken = tenantFile('broken.json', { orders: { schema: 'schemas/broken.json' } });
    expect(() => loadTenantFile(broken, 'tenants/broken.json')).toThrow(
      /^tenants\/broken.json: queues.orders.schema \(schemas\/broken.json\): not valid JSON/,
    );
  });

  it('answers a tenant file that is missing or not JSON with its name (and where)', () => {
    expect(() => loadTenantFile(join(dir, 'absent.json'), 'tenants/absent.json')).toThrow(
      'tenants/absent.json: not found',
    );
    writeFileSync(join(dir, 'bad.json'), '{');
    expect(() => loadTenantFile(join(dir, 'bad.json'), 'tenants/bad.json')).toThrow(
      /^tenants\/bad.json:1:2: not valid JSON/,
    );
  });
});
