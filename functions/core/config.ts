import * as z from 'zod/mini';
import { consumerNameSchema, rateLimitsSchema, SCOPE, SCOPE_MESSAGE } from '../wire/fields.js';
import { TIER_DEFAULTS, TIERS } from './tiers.js';
import { issuesOf } from './validation.js';
import { intIn } from './zod-mini.js';

export { consumerNameSchema, type RateLimits, rateLimitsSchema } from '../wire/fields.js';

/** The tenant file (docs/contract.md, "Tenant configuration"): one schema for the CDK stack and the local runtime. */

export const QUEUE_NAME = /^[a-z0-9-]{1,64}$/;

const HOUR = 3600;

/**
 * `fan_out` in the tenant file: true, false, or "when_busy" (resolved as FanOut). A refined
 * `unknown` rather than a union of a boolean and a literal, which would add zod's union and
 * literal schemas to every bundle (~1 KB).
 */
const fanOutSchema = z
  .unknown()
  .check(
    z.refine((v) => v === true || v === false || v === 'when_busy', 'true, false or "when_busy"'),
  ) as z.ZodMiniType<boolean | 'when_busy'>;

/**
 * A Lambda function subscribed to the queue's stream (docs/lambda-consumers.md), wrapped in
 * the consumer middleware (`leaseq/consumer`).
 */
const lambdaConsumerSchema = z.strictObject({
  name: consumerNameSchema,
  /** The handler module, relative to the project root (the stack bundles it; the local runtime imports it). */
  entry: z
    .string()
    .check(
      z.regex(/^(?!\/)(?!.*(^|\/)\.\.(\/|$)).+\.(ts|mts|js|mjs)$/, 'a relative path to a .ts or .js module'),
    ),
  /** The module's export that is the handler. */
  handler: z._default(z.string().check(z.regex(/^[A-Za-z_$][A-Za-z0-9_$]*$/, 'an export name')), 'handler'),
  batch_size: z._default(intIn(1, 10_000), 100),
  max_batching_window_seconds: z._default(intIn(0, 300), 0),
  timeout_seconds: z._default(intIn(1, 900), 60),
  memory_mb: z._default(intIn(128, 10_240), 512),
});

/** A team's name, as alarms and the DLQ's owner show it. */
export const teamSchema = z
  .string()
  .check(z.regex(/^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$/, 'a team name: 1-64 of [A-Za-z0-9 _.-]'));

const queueFieldsSchema = z
  .strictObject({
    /**
     * What the queue's messages are worth (core/tiers.ts): it sets the retention defaults, the
     * DLQ alarm, paging, and what synth requires (an owner, settings at the tier's standard).
     */
    tier: z._default(z.enum(TIERS), 'standard'),
    /** The team that owns the queue and its dead letters: named in its alarms and its DLQ. */
    owner: z.optional(teamSchema),
    ordered: z._default(z.boolean(), false),
    /**
     * An ordered queue's per-key batch: one receive may lease up to this many consecutive
     * messages of one key, delivered in order in one answer (1: one message of a key in flight).
     */
    max_per_key: z._default(intIn(1, 10), 1),
    /**
     * Shards of a stream of the queue's own (which naming them asks for); a queue that names
     * neither `shards` nor `stream` shares the tenant's stream (docs/streams.md).
     */
    shards: z.optional(intIn(1, 500)),
    /**
     * Enhanced fan-out for the mappings that read the queue's own stream (docs/streams.md, "Fan-out"):
     * records pushed to dispatch in ~70 ms, and its reads no longer count against a shard's five a
     * second. Billed per shard-hour like a shard: `true` always, `"when_busy"` (the default for a
     * queue without Lambda consumers) only while produce outruns the shard's reads; a shared
     * stream sets it under `streams`.
     */
    fan_out: z.optional(fanOutSchema),
    /** A stream the tenant file declares under `streams`, shared with the other queues that name it. */
    stream: z.optional(z.string().check(z.regex(QUEUE_NAME, 'stream names are 1-64 of [a-z0-9-]'))),
    lease_seconds: z._default(intIn(1, 12 * HOUR), 60),
    /**
     * The total time one delivery may stay leased, counted from its delivery across every extend:
     * a cap on the sum, not one lease's length (that is `lease_seconds`, or a receive's own).
     */
    max_lease_seconds: z._default(intIn(1, 12 * HOUR), HOUR),
    max_attempts: z._default(intIn(1, 100), 5),
    backoff_seconds: z._default(
      z.array(intIn(0, 12 * HOUR)).check(z.minLength(1), z.maxLength(20)),
      [10, 60, 600, 3600],
    ),
    /** Defaults by tier (TIER_DEFAULTS). */
    retention_hours: z.optional(intIn(24, 365 * 24)),
    dlq_retention_hours: z.optional(intIn(24, 2 * 365 * 24)),
    dedup_window_seconds: z._default(intIn(300), 86_400),
    claim_check_bytes: z._default(intIn(1024, 900 * 1024), 262_144),
    window_size: z._default(intIn(1, 1_000_000), 10_000),
    /**
     * Produce admits what it appended (admission/fast-admission.ts), so it is receivable when
     * produce answers: `quiet` while a shard takes under a range's worth a second (above that,
     * dispatch's batches keep ranges full and units per message low), `always` (latency bought
     * with units under load), `off` (dispatch alone, about a second later on AWS).
     * docs/overview.md, "Admission at produce".
     */
    fast_admission: z._default(z.enum(['quiet', 'always', 'off']), 'quiet'),
    /** A queue with Lambda consumers is consumed by them (push), not by dispatch (pull). */
    consumers: z._default(z.array(lambdaConsumerSchema), []),
    rate_limits: z._default(rateLimitsSchema, {}),
    /**
     * Receives of the queue that may wait at once (core/long-polls.ts): a long poll holds an
     * invocation of the api function while it waits; past this a receive answers at once.
     */
    max_waiting_receives: z._default(intIn(1, 1000), 100),
    /** Bytes the queue may hold unconsumed; the default is derived (see storageQuotaBytes). */
    storage_quota_bytes: z.optional(z.number().check(z.int(), z.positive())),
    /**
     * A JSON Schema every produced payload must match: produce answers a message that does not
     * `failed` (SCHEMA_VALIDATION_FAILED) and goes on with the rest of its batch. Compiled where
     * the file is loaded (checkPayloadSchemas), so only produce's bundle carries the validator.
     */
    schema: z.optional(z.record(z.string(), z.unknown())),
    /** The schema's version: carried in each accepted message's envelope and every delivery. */
    schema_ref: z.optional(z.string().check(z.minLength(1), z.maxLength(128))),
  })
  .check(
    z.superRefine((q, ctx) => {
      if (q.schema_ref !== undefined && q.schema === undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['schema_ref'],
          message: 'names the version of a schema: add schema',
        });
      if (q.max_per_key > 1 && !q.ordered)
        ctx.addIssue({
          code: 'custom',
          path: ['max_per_key'],
          message: 'batches the messages of a key: only an ordered queue has keys in order',
        });
      if (q.lease_seconds > q.max_lease_seconds) {
        ctx.addIssue({
          code: 'custom',
          path: ['lease_seconds'],
          message: 'must not exceed max_lease_seconds',
        });
      }
      const seen = new Set<string>();
      q.consumers.forEach((c, i) => {
        // The name keys the consumer's message state: two of one name would share it.
        if (seen.has(c.name)) {
          ctx.addIssue({
            code: 'custom',
            path: ['consumers', i, 'name'],
            message: 'consumer names are unique',
          });
        }
        seen.add(c.name);
      });
    }),
  );

/** A queue of the tenant file, with its tier's defaults filled in. */
export const queueConfigSchema = z
  .pipe(
    queueFieldsSchema,
    z.transform((q) => ({
      ...q,
      retention_hours: q.retention_hours ?? TIER_DEFAULTS[q.tier].retention_hours,
      dlq_retention_hours: q.dlq_retention_hours ?? TIER_DEFAULTS[q.tier].dlq_retention_hours,
    })),
  )
  .check(
    z.superRefine((q, ctx) => {
      if (q.dedup_window_seconds > q.retention_hours * HOUR) {
        ctx.addIssue({
          code: 'custom',
          path: ['dedup_window_seconds'],
          message: 'must not exceed the retention',
        });
      }
    }),
  );

const scopeSchema = z.string().check(z.regex(SCOPE, SCOPE_MESSAGE));

/** A key declared in the tenant file: only its SHA-256 is kept, never the key itself. */
export const apiKeyConfigSchema = z.strictObject({
  name: z.string().check(z.regex(/^[A-Za-z0-9_.-]{1,64}$/)),
  sha256: z.string().check(z.regex(/^[0-9a-f]{64}$/, 'sha256 is the lowercase hex SHA-256 of the key')),
  scopes: z.array(scopeSchema).check(z.minLength(1)),
  rate_limits: z._default(rateLimitsSchema, {}),
});

/**
 * Who hears the tenant's alarms (docs/alarms.md): each address is subscribed to the
 * tenant's alarm topic by email, and confirms it once from the message SNS sends. `email` hears
 * every alarm; `consuming_team`, `platform` and `producing_team` only their own
 * (observability/alarm-rules.ts ALARM_OWNERS).
 */
const addresses = z._default(z.array(z.email()).check(z.maxLength(20)), []);
export const alarmsConfigSchema = z.strictObject({
  email: addresses,
  consuming_team: addresses,
  platform: addresses,
  producing_team: addresses,
  /** The on-call route: hears the paging alarms of standard and critical queues (core/tiers.ts). */
  page: addresses,
});

export type AlarmsConfig = z.infer<typeof alarmsConfigSchema>;

/** A stream queues share: shards and retention belong to it, not to its queues. */
const streamConfigSchema = z.strictObject({
  shards: z._default(intIn(1, 500), 1),
  /** At least the longest retention among its queues, which it keeps for all of them. */
  retention_hours: z.optional(intIn(24, 365 * 24)),
  /** Enhanced fan-out for its mappings, as a queue's own `fan_out`. */
  fan_out: z.optional(fanOutSchema),
});

/**
 * When a stream's mappings read on enhanced fan-out: `always`, `off`, or `when_busy` (dispatch's
 * mapping gets a consumer while produce outruns what the shard's reads admit at once, and loses it
 * an hour after: core/fan-out-switch.ts).
 */
export type FanOut = 'always' | 'when_busy' | 'off';
const WHEN_BUSY = 'when_busy';

/** The declared `fan_out` as it is meant: a stream that only Lambda consumers read is never switched. */
function resolveFanOut(declared: boolean | typeof WHEN_BUSY | undefined, dispatched: boolean): FanOut {
  if (declared === true) return 'always';
  if (declared === false) return 'off';
  return dispatched ? 'when_busy' : 'off';
}

/** The stream a queue that names neither `shards` nor `stream` joins. */
export const SHARED_STREAM = 'shared';
/** A queue of its own stream gets these shards when it names none (a queue with Lambda consumers). */
const OWN_STREAM_SHARDS = 2;
/** What one shard takes a second (Kinesis' write limit). */
export const SHARD_WRITE = { records: 1000, bytes: 1024 * 1024 } as const;
/** GetRecords calls one shard serves a second, shared by every reader (Kinesis' read limit). */
export const SHARD_READS_PER_SECOND = 5;

type TenantFields = z.infer<typeof tenantFieldsSchema>;

/**
 * Whether a queue has a stream of its own: it names its shards, or it has Lambda consumers (an
 * event source mapping reads a whole stream, so another queue's records would invoke them).
 */
function ownStream(q: DeclaredQueue): boolean {
  return q.stream === undefined && (q.shards !== undefined || q.consumers.length > 0);
}

/** The queues on each shared stream, by the stream's name. */
function sharedStreams(t: TenantFields): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [name, q] of Object.entries(t.queues)) {
    if (ownStream(q)) continue;
    const stream = q.stream ?? SHARED_STREAM;
    out.set(stream, [...(out.get(stream) ?? []), name]);
  }
  return out;
}

/** A shared stream's produce capacity, each queue's declared quota, and what is left for the others. */
function produceShares(t: TenantFields, stream: string, queues: readonly string[]) {
  const shards = t.streams[stream]?.shards ?? 1;
  const share = (unit: 'messages_per_sec' | 'bytes_per_sec', capacity: number) => {
    const declared = queues.filter((q) => t.queues[q]?.rate_limits.produce?.[unit] !== undefined);
    const used = declared.reduce((n, q) => n + (t.queues[q]?.rate_limits.produce?.[unit] ?? 0), 0);
    const rest = queues.length - declared.length;
    return { capacity, used, each: rest ? Math.floor((capacity - used) / rest) : undefined };
  };
  return {
    messages: share('messages_per_sec', shards * SHARD_WRITE.records),
    bytes: share('bytes_per_sec', shards * SHARD_WRITE.bytes),
  };
}

/** What a tenant file gets wrong about its streams. */
function streamIssues(t: TenantFields): { path: (string | number)[]; message: string }[] {
  const issues: { path: (string | number)[]; message: string }[] = [];
  for (const [name, q] of Object.entries(t.queues)) {
    if (q.fan_out !== undefined && !ownStream(q))
      issues.push({
        path: ['queues', name, 'fan_out'],
        message: 'a shared stream has its fan-out: set it under streams',
      });
    if (q.fan_out === WHEN_BUSY && q.consumers.length > 0)
      issues.push({
        path: ['queues', name, 'fan_out'],
        message: `"${WHEN_BUSY}" switches dispatch's mapping, which a queue with Lambda consumers does not have: true or false`,
      });
    if (q.stream === undefined) continue;
    if (q.stream !== SHARED_STREAM && !Object.hasOwn(t.streams, q.stream))
      issues.push({
        path: ['queues', name, 'stream'],
        message: `names stream "${q.stream}", which streams does not declare`,
      });
    if (q.shards !== undefined)
      issues.push({
        path: ['queues', name, 'shards'],
        message: 'a shared stream has the shards: set them under streams',
      });
    if (q.consumers.length > 0)
      issues.push({
        path: ['queues', name, 'consumers'],
        message:
          'a queue with Lambda consumers has a stream of its own (their mapping reads the whole stream): drop stream',
      });
  }
  const shared = sharedStreams(t);
  for (const name of Object.keys(t.streams))
    if (!shared.has(name)) issues.push({ path: ['streams', name], message: 'no queue names this stream' });
  for (const [stream, queues] of shared) {
    if (queues.length < 2) continue;
    const { messages, bytes } = produceShares(t, stream, queues);
    for (const [what, s] of [
      ['messages', messages],
      ['bytes', bytes],
    ] as const) {
      const over = s.used > s.capacity || (s.each !== undefined && s.each < 1);
      if (over)
        issues.push({
          path: ['streams', stream],
          message:
            `the produce quotas of its queues (${queues.join(', ')}) take ${s.used} ${what} a second of the ` +
            `${s.capacity} its shards take${s.each !== undefined ? ', leaving none for the queues that declare none' : ''}: ` +
            'lower them or give the stream more shards',
        });
    }
  }
  return issues;
}

/**
 * Each queue's stream, shards and retention. A queue on a shared stream keeps the stream's
 * retention (the longest its queues ask for), and one that declares no produce quota gets an even
 * share of what the declared ones leave of the stream's write limit, so no queue can take a
 * shared shard from the others.
 */
function resolveStreams(t: TenantFields): TenantConfig {
  const shared = sharedStreams(t);
  const queues: Record<string, QueueConfig> = {};
  for (const [name, q] of Object.entries(t.queues)) {
    const { shards, stream: _named, fan_out, ...rest } = q;
    if (ownStream(q)) {
      queues[name] = {
        ...rest,
        stream: ownStreamName(t.tenant, name),
        shards: shards ?? OWN_STREAM_SHARDS,
        fan_out: resolveFanOut(fan_out, q.consumers.length === 0),
        shared_stream: false,
      };
      continue;
    }
    const stream = q.stream ?? SHARED_STREAM;
    const members = shared.get(stream) ?? [name];
    const declared = t.streams[stream];
    const retention = Math.max(
      declared?.retention_hours ?? 24,
      ...members.map((m) => t.queues[m]?.retention_hours ?? 24),
    );
    const produce = { ...rest.rate_limits.produce };
    if (members.length > 1) {
      const { messages, bytes } = produceShares(t, stream, members);
      produce.messages_per_sec ??= messages.each;
      produce.bytes_per_sec ??= bytes.each;
    }
    queues[name] = {
      ...rest,
      retention_hours: retention,
      rate_limits: { ...rest.rate_limits, ...(members.length > 1 ? { produce } : {}) },
      stream: sharedStreamName(t.tenant, stream),
      shards: declared?.shards ?? 1,
      fan_out: resolveFanOut(declared?.fan_out, true),
      shared_stream: true,
    };
  }
  return { ...t, queues };
}

const tenantFieldsSchema = z
  .strictObject({
    tenant: z.string().check(z.regex(/^[a-z0-9-]{1,32}$/, 'tenant names are 1-32 of [a-z0-9-]')),
    queues: z
      .record(z.string().check(z.regex(QUEUE_NAME, 'queue names are 1-64 of [a-z0-9-]')), queueConfigSchema)
      .check(z.refine((q) => Object.keys(q).length > 0, 'declare at least one queue')),
    /** Streams the queues share, by name; a queue names one with `stream` (docs/streams.md). */
    streams: z._default(
      z.record(
        z.string().check(z.regex(QUEUE_NAME, 'stream names are 1-64 of [a-z0-9-]')),
        streamConfigSchema,
      ),
      {},
    ),
    api_keys: z._default(z.array(apiKeyConfigSchema), []),
    /**
     * Whether API keys may have SQS credentials (docs/sqs-endpoint.md): their secrets are sealed
     * with a KMS key of the stack, which bills $1 a month, so only a tenant that asks has one.
     */
    sqs_credentials: z._default(z.boolean(), false),
    alarms: z._default(alarmsConfigSchema, {
      email: [],
      consuming_team: [],
      platform: [],
      producing_team: [],
      page: [],
    }),
  })
  .check(
    z.superRefine((t, ctx) => {
      // A scope on a queue the file does not declare is a typo that would fail every request.
      t.api_keys.forEach((key, i) => {
        key.scopes.forEach((scope, j) => {
          const queue = scope.slice(scope.indexOf(':') + 1);
          if (queue !== '*' && !Object.hasOwn(t.queues, queue))
            ctx.addIssue({
              code: 'custom',
              path: ['api_keys', i, 'scopes', j],
              message: `names queue "${queue}", which the file does not declare`,
            });
        });
      });
      for (const issue of streamIssues(t)) ctx.addIssue({ code: 'custom', ...issue });
    }),
  );

/** The tenant file with each queue's stream resolved (docs/streams.md). */
export const tenantConfigSchema = z.pipe(tenantFieldsSchema, z.transform(resolveStreams));

/** A queue as the file declares it, its tier's defaults filled in. */
type DeclaredQueue = z.infer<typeof queueConfigSchema>;
/** A queue with its stream resolved: what every part of leaseq reads. */
export type QueueConfig = Omit<DeclaredQueue, 'shards' | 'stream' | 'fan_out'> & {
  /** The Kinesis stream its messages are appended to. */
  stream: string;
  /** Its stream's shards. */
  shards: number;
  /** When its stream's mappings read on enhanced fan-out. */
  fan_out: FanOut;
  /** Whether its stream is one queues share (declared under `streams`, or the tenant's), not its own. */
  shared_stream: boolean;
};
export type TenantConfig = Omit<z.infer<typeof tenantFieldsSchema>, 'queues'> & {
  queues: Record<string, QueueConfig>;
};
export type ApiKeyConfig = z.infer<typeof apiKeyConfigSchema>;
export type ConsumerConfig = z.infer<typeof lambdaConsumerSchema>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    message: string,
    readonly issues: { path: string; message: string }[],
  ) {
    super(message);
  }
}

/** Validates a parsed tenant file and fills in every default. */
export function parseTenantConfig(raw: unknown, source = 'tenant file'): TenantConfig {
  const result = tenantConfigSchema.safeParse(raw);
  if (result.success) return result.data;
  const issues = issuesOf(result.error, '(root)');
  throw new ConfigError(
    `${source} is invalid: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
    issues,
  );
}

/** The stream of a queue of its own stream: the name it has always had. */
export function ownStreamName(tenant: string, queue: string): string {
  return `leaseq-${tenant}-${queue}`;
}

/** A shared stream's name: `_` is in no queue's name, so it never meets a queue's own stream. */
function sharedStreamName(tenant: string, stream: string): string {
  return `leaseq-${tenant}_${stream}`;
}

/** The stream a queue or a consumer's namespace of it reads (a queue the tenant declares). */
export function streamOf(tenant: TenantConfig, name: string): string {
  const config = tenant.queues[namespaceParts(name).queue];
  if (!config) throw new Error(`no queue ${name} in the tenant file`);
  return config.stream;
}

/** A stream of the tenant, as its queues resolved it: they agree on all but their names. */
export interface TenantStream {
  shards: number;
  retention_hours: number;
  shared: boolean;
  /** When its mappings read on enhanced fan-out. */
  fan_out: FanOut;
  /** The queues that append to it. */
  queues: string[];
}

/** Each stream of the tenant, by its Kinesis name. */
export function tenantStreams(tenant: TenantConfig): Map<string, TenantStream> {
  const out = new Map<string, TenantStream>();
  for (const [name, q] of Object.entries(tenant.queues)) {
    const seen = out.get(q.stream);
    if (seen) seen.queues.push(name);
    else
      out.set(q.stream, {
        shards: q.shards,
        retention_hours: q.retention_hours,
        shared: q.shared_stream,
        fan_out: q.fan_out,
        queues: [name],
      });
  }
  return out;
}

/**
 * Where a Lambda consumer keeps its own state of a queue's messages: a queue name of its own,
 * which no real queue can have (`~` is not in QUEUE_NAME), so every store works on it unchanged.
 */
export function consumerNamespace(queue: string, consumer: string): string {
  return `${queue}~${consumer}`;
}

export function isNamespace(name: string): boolean {
  return name.includes('~');
}

/**
 * Whether `name`'s messages are a key's heads and held messages (an ordered pull queue's own
 * state); a Lambda consumer's namespace of an ordered queue keeps its order by its own keys.
 */
export function keyOrdered(name: string, config: QueueConfig): boolean {
  return config.ordered && !isNamespace(name);
}

/** The queue whose stream feeds a state namespace, and the consumer it belongs to (if any). */
export function namespaceParts(name: string): { queue: string; consumer?: string } {
  const at = name.indexOf('~');
  return at < 0 ? { queue: name } : { queue: name.slice(0, at), consumer: name.slice(at + 1) };
}

export function tableName(tenant: string): string {
  return `leaseq-${tenant}`;
}

/**
 * The bytes a queue may hold: its own setting, or what its produce rate (the byte quota, else
 * its shards' write capacity) fills over the retention, with half again for headroom.
 */
export function storageQuotaBytes(q: QueueConfig): number {
  if (q.storage_quota_bytes !== undefined) return q.storage_quota_bytes;
  const rate = q.rate_limits.produce?.bytes_per_sec ?? q.shards * SHARD_WRITE.bytes;
  return Math.floor(rate * q.retention_hours * HOUR * 1.5);
}
