import { describe, expect, it } from 'vitest';
import { ENV, runtimeConfigFromEnv } from '../../functions/core/runtime-config.js';

/** What a function instance reads of its environment (core/runtime-config.ts), checked at the edge. */

const TENANT = JSON.stringify({ tenant: 'acme', queues: { jobs: {} } });
const BASE = {
  [ENV.tenantConfig]: TENANT,
  [ENV.table]: 'leaseq-acme',
  [ENV.bucket]: 'leaseq-acme-bucket',
  [ENV.region]: 'eu-west-1',
};

/** The issues zod reports, as `path: message`, or the config when the environment passes. */
function issues(env: Record<string, string>): string[] {
  try {
    runtimeConfigFromEnv(env, undefined);
  } catch (err) {
    return (err as { issues: { path: PropertyKey[]; message: string }[] }).issues.map(
      (i) => `${i.path.join('.')}: ${i.message}`,
    );
  }
  return [];
}

describe('runtimeConfigFromEnv', () => {
  it('reads the tenant, the resources and the local endpoints, with their defaults filled in', () => {
    const endpoints = {
      dynamodb: 'http://127.0.0.1:1',
      kinesis: 'http://127.0.0.1:2',
      s3: 'http://127.0.0.1:3',
    };
    const config = runtimeConfigFromEnv(
      { ...BASE, [ENV.localEndpoints]: JSON.stringify(endpoints) },
      undefined,
    );
    expect(config).toMatchObject({
      tableName: 'leaseq-acme',
      bucketName: 'leaseq-acme-bucket',
      region: 'eu-west-1',
    });
    expect(config.endpoints).toEqual(endpoints);
    expect(config.tenant.queues.jobs).toMatchObject({
      stream: 'leaseq-acme_shared',
      shards: 1,
      lease_seconds: 60,
      fast_admission: 'quiet',
    });
    expect(runtimeConfigFromEnv(BASE, undefined).endpoints).toBeUndefined();
  });

  it('names what is wrong in English: endpoints that are not JSON, or not URLs, and a missing table', () => {
    expect(issues({ ...BASE, [ENV.localEndpoints]: '{dynamodb' })).toEqual([
      `${ENV.localEndpoints}: not JSON`,
    ]);
    expect(
      issues({
        ...BASE,
        [ENV.localEndpoints]: JSON.stringify({ dynamodb: 'x', kinesis: 'http://a', s3: 'http://b' }),
      }),
    ).toEqual([`${ENV.localEndpoints}.dynamodb: Invalid URL`]);
    const { [ENV.table]: _table, ...noTable } = BASE;
    expect(issues(noTable)).toEqual([`${ENV.table}: Invalid input: expected string, received undefined`]);
  });

  it('prefers the bundled tenant file to the environment', () => {
    const bundled = JSON.stringify({ tenant: 'bundled', queues: { q: {} } });
    expect(runtimeConfigFromEnv(BASE, bundled).tenant.tenant).toBe('bundled');
  });
});
