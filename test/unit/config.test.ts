import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  consumerNamespace,
  namespaceParts,
  parseTenantConfig,
  tenantStreams,
} from '../../functions/core/config.js';
import { checkPayloadSchemas } from '../../functions/core/payload-schema.js';
import { buildApp } from '../../infra/build-app.js';

const issuesOf = (raw: unknown): { path: string; message: string }[] => {
  try {
    parseTenantConfig(raw);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  throw new Error('expected the config to be rejected');
};

describe('tenant configuration', () => {
  it('fills every queue default of the contract', () => {
    const config = parseTenantConfig({ tenant: 'acme', queues: { jobs: {} } });
    expect(config.queues.jobs).toEqual({
      tier: 'standard',
      ordered: false,
      max_per_key: 1,
      // No shards named: the queue joins the tenant's shared stream, of one shard.
      stream: 'leaseq-acme_shared',
      shards: 1,
      // Dispatch's mapping gets a consumer while the queue is busy (core/fan-out-switch.ts).
      fan_out: 'when_busy',
      shared_stream: true,
      lease_seconds: 60,
      max_lease_seconds: 3600,
      max_attempts: 5,
      backoff_seconds: [10, 60, 600, 3600],
      retention_hours: 24,
      dlq_retention_hours: 336,
      dedup_window_seconds: 86400,
      claim_check_bytes: 262144,
      window_size: 10000,
      fast_admission: 'quiet',
      consumers: [],
      rate_limits: {},
      max_waiting_receives: 100,
    });
    expect(config.api_keys).toEqual([]);
    // No owner named: the alarm topic is made anyway, with no subscription (README "Alarms").
    expect(config.alarms).toEqual({
      email: [],
      consuming_team: [],
      platform: [],
      producing_team: [],
      page: [],
    });
  });

  it('gives a queue that names its shards, or has Lambda consumers, a stream of its own as before', () => {
    const config = parseTenantConfig({
      tenant: 'acme',
      queues: {
        big: { shards: 4 },
        pushed: { consumers: [{ name: 'c', entry: 'c.ts' }] },
        small: {},
      },
    });
    expect(config.queues.big).toMatchObject({ stream: 'leaseq-acme-big', shards: 4, shared_stream: false });
    expect(config.queues.pushed).toMatchObject({
      stream: 'leaseq-acme-pushed',
      shards: 2,
      shared_stream: false,
    });
    expect(config.queues.small).toMatchObject({
      stream: 'leaseq-acme_shared',
      shards: 1,
      shared_stream: true,
    });
    // Alone on the shared stream, a queue keeps the quotas it declares (none).
    expect(config.queues.small?.rate_limits).toEqual({});
    expect(new Map([...tenantStreams(config)].map(([name, s]) => [name, s.queues]))).toEqual(
      new Map([
        ['leaseq-acme-big', ['big']],
        ['leaseq-acme-pushed', ['pushed']],
        ['leaseq-acme_shared', ['small']],
      ]),
    );
  });

  it('shares a declared stream: its shards, the longest retention, and even produce shares', () => {
    const config = parseTenantConfig({
      tenant: 'acme',
      streams: { orders: { shards: 2 } },
      queues: {
        a: { stream: 'orders', retention_hours: 72 },
        b: { stream: 'orders', rate_limits: { produce: { messages_per_sec: 1000, bytes_per_sec: 1048576 } } },
        c: { stream: 'orders' },
      },
    });
    for (const q of ['a', 'b', 'c'])
      expect(config.queues[q]).toMatchObject({
        stream: 'leaseq-acme_orders',
        shards: 2,
        retention_hours: 72,
      });
    // Two shards take 2,000 records and 2 MiB a second; b declares half, a and c share the rest.
    expect(config.queues.a?.rate_limits.produce).toEqual({ messages_per_sec: 500, bytes_per_sec: 524288 });
    expect(config.queues.c?.rate_limits.produce).toEqual({ messages_per_sec: 500, bytes_per_sec: 524288 });
    expect(config.queues.b?.rate_limits.produce).toEqual({ messages_per_sec: 1000, bytes_per_sec: 1048576 });
  });

  it('puts fan-out on the stream: declared under streams, or on a queue of its own stream', () => {
    const config = parseTenantConfig({
      tenant: 'acme',
      streams: { fast: { fan_out: true } },
      queues: {
        a: { stream: 'fast' },
        b: { stream: 'fast' },
        own: { shards: 2, fan_out: true },
        polled: { shards: 1, fan_out: false },
        pushed: { consumers: [{ name: 'c', entry: 'c.ts' }] },
        rest: {},
      },
    });
    expect(config.queues.a?.fan_out).toBe('always');
    expect(config.queues.b?.fan_out).toBe('always');
    expect(config.queues.own?.fan_out).toBe('always');
    expect(config.queues.polled?.fan_out).toBe('off');
    // Dispatch's mapping is switched; a stream only Lambda consumers read has none.
    expect(config.queues.rest?.fan_out).toBe('when_busy');
    expect(config.queues.pushed?.fan_out).toBe('off');
    expect(tenantStreams(config).get('leaseq-acme_fast')?.fan_out).toBe('always');
    expect(tenantStreams(config).get('leaseq-acme_shared')?.fan_out).toBe('when_busy');
  });

  it.each([
    [{ queues: { q: { stream: 'nope' } } }, /names stream "nope", which streams does not declare/],
    [{ queues: { q: { fan_out: true } } }, /a shared stream has its fan-out: set it under streams/],
    [{ streams: { s: {} }, queues: { q: { stream: 's', fan_out: true } } }, /set it under streams/],
    [
      { queues: { q: { fan_out: 'when_busy', consumers: [{ name: 'c', entry: 'c.ts' }] } } },
      /switches dispatch's mapping, which a queue with Lambda consumers does not have/,
    ],
    [{ streams: { s: { fan_out: 'sometimes' } }, queues: { q: { stream: 's' } } }, /fan_out/],
    [{ streams: { s: {} }, queues: { q: { stream: 's', shards: 2 } } }, /set them under streams/],
    [
      { streams: { s: {} }, queues: { q: { stream: 's', consumers: [{ name: 'c', entry: 'c.ts' }] } } },
      /a queue with Lambda consumers has a stream of its own/,
    ],
    [{ streams: { s: {} }, queues: { q: {} } }, /no queue names this stream/],
    [
      {
        queues: {
          a: { rate_limits: { produce: { messages_per_sec: 900 } } },
          b: { rate_limits: { produce: { messages_per_sec: 200 } } },
        },
      },
      /take 1100 messages a second of the 1000 its shards take/,
    ],
    [
      { queues: { a: { rate_limits: { produce: { messages_per_sec: 1000 } } }, b: {} } },
      /leaving none for the queues that declare none/,
    ],
  ])('refuses a stream the queues cannot share: %j', (file, message) => {
    expect(() => parseTenantConfig({ tenant: 'acme', ...file })).toThrow(message);
  });

  it('takes max_per_key from 1 to 10, on ordered queues only', () => {
    const queue = (q: Record<string, unknown>) => parseTenantConfig({ tenant: 'a', queues: { q } }).queues.q;
    expect(queue({ ordered: true, max_per_key: 10 })?.max_per_key).toBe(10);
    expect(() => queue({ ordered: true, max_per_key: 11 })).toThrow(/max_per_key/);
    expect(() => queue({ ordered: true, max_per_key: 0 })).toThrow(/max_per_key/);
    expect(() => queue({ max_per_key: 2 })).toThrow(/only an ordered queue/);
  });

  it('keeps the alarm owners of the tenant file', () => {
    const config = parseTenantConfig({
      tenant: 'a',
      queues: { jobs: {} },
      alarms: { email: ['ops@example.com'] },
    });
    expect(config.alarms.email).toEqual(['ops@example.com']);
  });

  it('refuses a payload schema that does not compile, and a schema_ref without a schema', () => {
    const schemaIssues = (schema: unknown) => {
      try {
        checkPayloadSchemas(parseTenantConfig({ tenant: 'acme', queues: { jobs: { schema } } }));
      } catch (err) {
        if (err instanceof ConfigError) return err.issues;
        throw err;
      }
      return [];
    };
    expect(schemaIssues({ type: 'objekt' }).map((i) => i.path)).toEqual(['queues.jobs.schema']);
    expect(schemaIssues({ typo: 1 })[0]?.message).toContain('unknown keyword: "typo"');
    expect(schemaIssues({ type: 'object', required: ['id'] })).toEqual([]);
    expect(issuesOf({ tenant: 'acme', queues: { jobs: { schema_ref: 'v1' } } })).toEqual([
      { path: 'queues.jobs.schema_ref', message: 'names the version of a schema: add schema' },
    ]);
    expect(() =>
      buildApp({ tenant: 'acme', queues: { jobs: { schema: { type: 'objekt' } } } }, { source: 'acme.json' }),
    ).toThrow(/acme.json is invalid: queues.jobs.schema: schema is invalid/);
  });

  it('fills every default of a Lambda consumer', () => {
    const config = parseTenantConfig({
      tenant: 'acme',
      queues: { events: { consumers: [{ name: 'billing', entry: 'src/billing.ts' }] } },
    });
    expect(config.queues.events?.consumers).toEqual([
      {
        name: 'billing',
        entry: 'src/billing.ts',
        handler: 'handler',
        batch_size: 100,
        max_batching_window_seconds: 0,
        timeout_seconds: 60,
        memory_mb: 512,
      },
    ]);
  });

  it('takes Lambda consumers on an ordered queue, and names them apart from the queue', () => {
    const consumers = [{ name: 'billing', entry: 'src/billing.ts' }];
    const config = parseTenantConfig({ tenant: 'a', queues: { ledger: { ordered: true, consumers } } });
    expect(config.queues.ledger?.consumers.map((c) => c.name)).toEqual(['billing']);
    expect(namespaceParts(consumerNamespace('ledger', 'billing'))).toEqual({
      queue: 'ledger',
      consumer: 'billing',
    });
    expect(namespaceParts('ledger')).toEqual({ queue: 'ledger' });
  });

  it('reads the shipped tenants/local.json: jobs unordered, ledger ordered, on one shared shard', () => {
    const config = parseTenantConfig(JSON.parse(readFileSync('tenants/local.json', 'utf8')));
    expect(config.queues.jobs).toMatchObject({ ordered: false, stream: 'leaseq-local_shared', shards: 1 });
    expect(config.queues.ledger).toMatchObject({ ordered: true, stream: 'leaseq-local_shared', shards: 1 });
  });

  it('rejects unknown keys with their path', () => {
    expect(issuesOf({ tenant: 'a', queues: { jobs: { shard: 2 } }, extra: 1 })).toEqual(
      expect.arrayContaining([
        { path: 'queues.jobs.shard', message: 'unknown key' },
        { path: 'extra', message: 'unknown key' },
      ]),
    );
  });

  it.each([
    [{ tenant: 'a', queues: { 'Bad Name': {} } }, 'queues.Bad Name'],
    [{ tenant: 'a', queues: { jobs: { shards: 0 } } }, 'queues.jobs.shards'],
    [
      { tenant: 'a', queues: { jobs: { lease_seconds: 120, max_lease_seconds: 60 } } },
      'queues.jobs.lease_seconds',
    ],
    [{ tenant: 'a', queues: { jobs: { tier: 'gold' } } }, 'queues.jobs.tier'],
    [{ tenant: 'a', queues: { jobs: { owner: '' } } }, 'queues.jobs.owner'],
    [{ tenant: 'a', queues: { jobs: { dedup_window_seconds: 60 } } }, 'queues.jobs.dedup_window_seconds'],
    [{ tenant: 'a', queues: { jobs: { max_lease_seconds: 13 * 3600 } } }, 'queues.jobs.max_lease_seconds'],
    [{ tenant: 'a', queues: { jobs: { backoff_seconds: [] } } }, 'queues.jobs.backoff_seconds'],
    [{ tenant: 'a', queues: {} }, 'queues'],
    [
      {
        tenant: 'a',
        queues: {
          jobs: {
            consumers: [
              { name: 'b', entry: 'b.ts' },
              { name: 'b', entry: 'c.ts' },
            ],
          },
        },
      },
      'queues.jobs.consumers[1].name',
    ],
    [
      { tenant: 'a', queues: { jobs: { consumers: [{ name: 'b', entry: '/abs/b.ts' }] } } },
      'queues.jobs.consumers[0].entry',
    ],
    [
      { tenant: 'a', queues: { jobs: { consumers: [{ name: 'b', entry: '../b.ts' }] } } },
      'queues.jobs.consumers[0].entry',
    ],
    [
      { tenant: 'a', queues: { jobs: { consumers: [{ name: 'B', entry: 'b.ts' }] } } },
      'queues.jobs.consumers[0].name',
    ],
    [
      { tenant: 'a', queues: { jobs: { consumers: [{ name: 'b', entry: 'b.ts', batch_size: 10_001 }] } } },
      'queues.jobs.consumers[0].batch_size',
    ],
    [
      { tenant: 'a', queues: { jobs: { consumers: [{ name: 'b', entry: 'b.ts', timeout_seconds: 901 }] } } },
      'queues.jobs.consumers[0].timeout_seconds',
    ],
    [{ tenant: 'UPPER', queues: { jobs: {} } }, 'tenant'],
    [
      {
        tenant: 'a',
        queues: { jobs: {} },
        api_keys: [{ name: 'k', sha256: 'nothex', scopes: ['produce:*'] }],
      },
      'api_keys[0].sha256',
    ],
    [
      {
        tenant: 'a',
        queues: { jobs: {} },
        api_keys: [{ name: 'k', sha256: 'a'.repeat(64), scopes: ['write:*'] }],
      },
      'api_keys[0].scopes[0]',
    ],
    // A scope on a queue the file does not declare (a typo that would refuse every request).
    [
      {
        tenant: 'a',
        queues: { jobs: {} },
        api_keys: [{ name: 'k', sha256: 'a'.repeat(64), scopes: ['consume:*', 'produce:job'] }],
      },
      'api_keys[0].scopes[1]',
    ],
    [
      { tenant: 'a', queues: { jobs: {} }, alarms: { email: ['ops@example.com', 'not an address'] } },
      'alarms.email[1]',
    ],
    [{ tenant: 'a', queues: { jobs: {} }, alarms: { emails: ['ops@example.com'] } }, 'alarms.emails'],
  ])('rejects a bad value with its path (%#)', (raw, path) => {
    expect(issuesOf(raw).map((i) => i.path)).toContain(path);
  });
});
