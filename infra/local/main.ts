import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { ConfigError } from '../../functions/core/config.js';
import { findingLine, tierFindings } from '../../functions/core/tiers.js';
import { readTenant, refuseTierFindings } from '../tenant-file.js';
import { DYNAMODB_EMULATOR_ENV, dynamodbEmulatorSchema } from './emulators.js';
import { channelPort, startRuntime } from './runtime.js';
import { checkPortFree, nearestOption, StartupError } from './startup-checks.js';

/** `npm start`: the whole system on 127.0.0.1 (docs/contract.md, "The local runtime"). */

const OPTIONS = {
  config: { type: 'string' },
  port: { type: 'string' },
  'data-dir': { type: 'string' },
  strict: { type: 'boolean' },
} as const;

/** The flags, or a StartupError naming the unknown one and the flag it is near. */
function flags() {
  try {
    return parseArgs({ options: OPTIONS }).values;
  } catch (err) {
    const unknown = /Unknown option '([^']+)'/.exec((err as Error).message)?.[1];
    const known = Object.keys(OPTIONS).map((o) => `--${o}`);
    const near = unknown && nearestOption(unknown, known);
    throw new StartupError(
      unknown
        ? `unknown option '${unknown}'${near ? ` (did you mean ${near}?)` : ''}: the options are ${known.join(', ')}`
        : (err as Error).message,
    );
  }
}

const PORT_ERROR = 'not a port number (0 to 65535)';

const optionsSchema = z.object({
  config: z.string().min(1),
  port: z.coerce
    .number({ error: PORT_ERROR })
    .int({ error: PORT_ERROR })
    .min(0, { error: PORT_ERROR })
    .max(65_535, { error: PORT_ERROR }),
  dataDir: z.string().min(1),
  adminKey: z.string().min(16, 'LEASEQ_ADMIN_KEY must be at least 16 characters').optional(),
  dynamodb: dynamodbEmulatorSchema,
});

async function main(): Promise<void> {
  // Locally, EMF documents on stdout are noise; LEASEQ_METRICS=stdout shows them.
  if (process.env.LEASEQ_METRICS !== 'stdout') process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  const values = flags();
  const options = optionsSchema.parse({
    config: values.config ?? process.env.LEASEQ_CONFIG ?? 'tenants/local.json',
    port: values.port ?? process.env.PORT ?? 4000,
    dataDir: values['data-dir'] ?? process.env.LEASEQ_DATA_DIR ?? '.leaseq',
    adminKey: process.env.LEASEQ_ADMIN_KEY || undefined,
    dynamodb: process.env[DYNAMODB_EMULATOR_ENV] || undefined,
  });
  const configPath = resolve(options.config);
  const file = readTenant(configPath);
  const tenant = file.config;
  // A queue on a laptop is nobody's production queue: what synth refuses is a warning here,
  // unless --strict asks for synth's answer.
  if (values.strict) refuseTierFindings(file, options.config);
  for (const finding of tierFindings(tenant, file.exceptions, Date.now()))
    process.stderr.write(`leaseq: warning: ${findingLine(finding)}\n`);
  await checkPortFree(options.port);
  await checkPortFree(channelPort(options.port));
  const runtime = await startRuntime({
    tenant,
    dataDir: resolve(options.dataDir),
    port: options.port,
    adminKey: options.adminKey,
    logLevel: 'INFO',
    dynamodb: options.dynamodb,
  });

  const queues = Object.entries(tenant.queues)
    .map(([name, q]) => `  ${name.padEnd(20)} ${q.ordered ? 'ordered  ' : 'unordered'} ${q.shards} shard(s)`)
    .join('\n');
  process.stdout.write(
    [
      `leaseq is running for tenant "${tenant.tenant}" at ${runtime.url}`,
      `data folder: ${resolve(options.dataDir)}`,
      `admin key:   ${runtime.adminKey}`,
      `console:     ${runtime.url}/console (paste the admin key)`,
      `channel:     ${runtime.channelUrl} (the wake channel: a Worker's channelUrl)`,
      // Ports picked at each start: tools (the chaos run's reshards, an AWS CLI) reach the emulators here.
      `emulators:   Kinesis ${runtime.endpoints.kinesis}, DynamoDB ${runtime.endpoints.dynamodb}, S3 ${runtime.endpoints.s3}`,
      ...(runtime.sqsCredentials
        ? [
            'SQS credentials of the admin key (SigV4, any region):',
            `  AWS_ACCESS_KEY_ID=${runtime.sqsCredentials.access_key_id}`,
            `  AWS_SECRET_ACCESS_KEY=${runtime.sqsCredentials.secret_access_key}`,
          ]
        : []),
      'queues:',
      queues,
      '',
      `try: curl -s ${runtime.url}/queues/${Object.keys(tenant.queues)[0]}/messages -H "authorization: Bearer ${runtime.adminKey}" -H 'content-type: application/json' -d '{"messages":[{"payload":{"hello":"world"}}]}'`,
      '',
    ].join('\n'),
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`\n${signal}: stopping leaseq…\n`);
    await runtime.close();
    process.stdout.write('stopped\n');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

// A mistake in what was asked for is one line and exit 2 (as `leaseq start`); anything else is a bug.
main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof StartupError) {
    process.stderr.write(`leaseq: ${err.message}\n`);
    process.exit(2);
  }
  if (err instanceof z.ZodError) {
    const issue = err.issues[0];
    process.stderr.write(`leaseq: ${issue?.path.join('.') || 'options'}: ${issue?.message ?? err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`leaseq: failed to start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
