import * as z from 'zod/mini';
import { parseTenantConfig, type TenantConfig } from './config.js';
import './zod-mini.js';

/**
 * What a function instance needs to run: the tenant, the names of its resources and where
 * AWS is. Validated once at the edge (the handler module) and passed in; nothing deeper
 * reads `process.env`.
 */
export interface RuntimeConfig {
  tenant: TenantConfig;
  tableName: string;
  bucketName: string;
  region: string;
  /** Local emulators; absent on AWS. */
  endpoints?: { dynamodb: string; kinesis: string; s3: string };
  /** Extra API keys (hashes) beyond the tenant file's, e.g. the local admin key. */
  extraKeys?: { name: string; sha256: string; scopes: string[] }[];
  /**
   * How the secrets of SQS credentials are sealed at rest (access/secret-box.ts): a KMS key of
   * the tenant's stack on AWS, a key kept in the data folder locally. Absent, no SQS credentials
   * can be made or used (the api answers 409 SQS_CREDENTIALS_UNAVAILABLE).
   */
  secrets?: SecretsConfig;
  /**
   * Every admission of the table (dispatch, produce's fast path, the sweep's) runs in this
   * process and wakes its waiting long polls: the local runtime. Their timed re-reads then only
   * catch what no admission announces (a lease that ended), and start slower.
   */
  admissionsInProcess?: boolean;
  /**
   * Every request as if it ran in a Lambda instance of its own: no admission wakes a long poll of
   * this process or hands it leases (on AWS a waiting receive holds its instance, so a produce
   * never runs beside it). The bench's `--as-aws` mode runs the local runtime so.
   */
  requestsIsolated?: boolean;
  /**
   * Called when this process armed the sweep (store/sweep-arm.ts): the local runtime wakes its
   * resting sweep, as the table's stream does on AWS.
   */
  onSweepArmed?: () => void;
  /**
   * The wake channel's management endpoint (API Gateway's WebSocket stage, or the local
   * runtime's): admissions post wakes there (docs/wake-channel.md). Absent, no channel.
   */
  channelEndpoint?: string;
  /** The tenant's alarm topic, which the sweep tells of its queue alarms' changes; absent (locally), it logs them only. */
  alarmTopicArn?: string;
  /**
   * The dispatch function, which the sweep maps to a busy stream's fan-out consumer
   * (core/fan-out-switch.ts); the stack sets it on the sweep of a tenant with such a stream.
   */
  dispatchFunction?: string;
}

export type SecretsConfig =
  /** AES-256-GCM with a 32-byte key, base64. */
  | { kind: 'local'; key: string }
  /** KMS Encrypt/Decrypt with this key (id or ARN). */
  | { kind: 'kms'; keyId: string };

/** The environment the stack gives each function (names fixed here and used by infra/). */
export const ENV = {
  tenantConfig: 'LEASEQ_TENANT_CONFIG',
  table: 'LEASEQ_TABLE',
  bucket: 'LEASEQ_BUCKET',
  region: 'AWS_REGION',
  /** JSON {dynamodb, kinesis, s3}: a function run outside AWS against the local emulators. */
  localEndpoints: 'LEASEQ_LOCAL_ENDPOINTS',
  /** A Lambda consumer's name in the tenant file (its stack sets it). */
  consumerName: 'LEASEQ_CONSUMER_NAME',
  /** The KMS key that seals SQS credentials' secrets (the stack sets it on the api function only). */
  secretsKeyId: 'LEASEQ_SECRETS_KEY_ID',
  /** The wake channel's management endpoint (`https://{api}.execute-api.{region}.amazonaws.com/{stage}`). */
  channelEndpoint: 'LEASEQ_CHANNEL_ENDPOINT',
  /** The tenant's alarm topic (the stack sets it on the sweep only). */
  alarmTopicArn: 'LEASEQ_ALARM_TOPIC_ARN',
  /** The dispatch function's name (the stack sets it on the sweep of a tenant with busy-time fan-out). */
  dispatchFunction: 'LEASEQ_DISPATCH_FUNCTION',
} as const;

/**
 * The tenant file as the stack bundles it into every function (esbuild `define`, key
 * BUNDLED_TENANT_CONFIG): a bundle has no size limit, where Lambda's environment holds 4 KB in
 * all (a 20-queue tenant file alone is over it). Outside a bundle (the local runtime, tests) it is
 * undefined: they pass the config in, or set LEASEQ_TENANT_CONFIG.
 */
declare const __LEASEQ_TENANT_CONFIG__: string | undefined;
export const BUNDLED_TENANT_CONFIG = '__LEASEQ_TENANT_CONFIG__';

function bundledTenantConfig(): string | undefined {
  return typeof __LEASEQ_TENANT_CONFIG__ === 'string' ? __LEASEQ_TENANT_CONFIG__ : undefined;
}

const endpointsSchema = z.strictObject({ dynamodb: z.url(), kinesis: z.url(), s3: z.url() });

const jsonText = z.pipe(
  z.string(),
  z.transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.issues.push({ code: 'custom', message: 'not JSON', input: text });
      return z.NEVER;
    }
  }),
);

const envSchema = z.object({
  [ENV.tenantConfig]: z.optional(z.string().check(z.minLength(2))),
  [ENV.table]: z.string().check(z.minLength(3)),
  [ENV.bucket]: z.string().check(z.minLength(3)),
  [ENV.region]: z.string().check(z.minLength(1)),
  [ENV.localEndpoints]: z.optional(z.pipe(jsonText, endpointsSchema)),
  [ENV.secretsKeyId]: z.optional(z.string().check(z.minLength(1), z.maxLength(2048))),
  [ENV.channelEndpoint]: z.optional(z.url()),
  [ENV.alarmTopicArn]: z.optional(z.string().check(z.regex(/^arn:[a-z-]+:sns:/))),
  [ENV.dispatchFunction]: z.optional(z.string().check(z.minLength(1), z.maxLength(170))),
});

export function runtimeConfigFromEnv(
  env: Record<string, string | undefined>,
  bundled: string | undefined = bundledTenantConfig(),
): RuntimeConfig {
  const parsed = envSchema.parse(env);
  const secretsKeyId = parsed[ENV.secretsKeyId];
  const tenantText = bundled ?? parsed[ENV.tenantConfig];
  if (tenantText === undefined)
    throw new Error(`no tenant config: not bundled (${BUNDLED_TENANT_CONFIG}), nor in ${ENV.tenantConfig}`);
  return {
    tenant: parseTenantConfig(
      JSON.parse(tenantText),
      bundled !== undefined ? 'the bundled tenant config' : ENV.tenantConfig,
    ),
    tableName: parsed[ENV.table],
    bucketName: parsed[ENV.bucket],
    region: parsed[ENV.region],
    ...(parsed[ENV.localEndpoints] ? { endpoints: parsed[ENV.localEndpoints] } : {}),
    ...(secretsKeyId ? { secrets: { kind: 'kms', keyId: secretsKeyId } } : {}),
    ...(parsed[ENV.channelEndpoint] ? { channelEndpoint: parsed[ENV.channelEndpoint] } : {}),
    ...(parsed[ENV.alarmTopicArn] ? { alarmTopicArn: parsed[ENV.alarmTopicArn] } : {}),
    ...(parsed[ENV.dispatchFunction] ? { dispatchFunction: parsed[ENV.dispatchFunction] } : {}),
  };
}
