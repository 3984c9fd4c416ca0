import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { TenantConfig } from '../../functions/core/config.js';
import { planShardCountSteps } from '../../functions/core/reshard-plan.js';
import { type GlobalOptions, positiveNumber, UsageError } from '../context.js';
import { table, writeJson, writeOut } from '../output.js';

/**
 * `leaseq reshard <stream|queue> <count>`: reshards a stream of the running local runtime live,
 * with the splits and merges kinesalite has (infra/local/reshard.ts). On AWS the tenant file's
 * `shards` and a deploy do it (docs/resharding.md); the command says which steps that takes.
 */

export function registerReshard(program: Command): void {
  program
    .command('reshard')
    .description(
      "change a local stream's shard count live (on AWS: change `shards` in the tenant file and deploy)",
    )
    .argument(
      '<stream|queue>',
      'a queue (its stream), a stream the tenant file declares, or a full stream name',
    )
    .argument('<count>', 'the open shards wanted', positiveNumber)
    .option('--config <file>', 'the tenant file (default $LEASEQ_CONFIG or tenants/local.json)')
    .option('--data-dir <dir>', "the local runtime's data folder (default $LEASEQ_DATA_DIR or .leaseq)")
    .action(
      async (name: string, count: number, opts: { config?: string; dataDir?: string }, cmd: Command) => {
        if (!Number.isInteger(count)) throw new UsageError(`<count>: not a whole number: ${count}`);
        const json = cmd.optsWithGlobals<GlobalOptions>().json === true;
        const tenant = await readTenant(opts.config ?? process.env.LEASEQ_CONFIG ?? 'tenants/local.json');
        const stream = await resolveStream(tenant, name);
        const endpoints = readEndpoints(opts.dataDir ?? process.env.LEASEQ_DATA_DIR ?? '.leaseq');
        // The SDK and the emulator's executor load only here: every other command goes without them.
        const [{ createAdminClients }, { reshardStream }] = await Promise.all([
          import('../../infra/local/admin-clients.js'),
          import('../../infra/local/reshard.js'),
        ]);
        const admin = createAdminClients(endpoints);
        try {
          const result = await reshardStream(admin.kinesis, stream, count).catch((err: unknown) => {
            if ((err as { code?: string }).code === 'ECONNREFUSED')
              throw new UsageError(
                `no local runtime answers at ${endpoints.kinesis}: start it with npm start`,
              );
            throw err;
          });
          const onAws = planShardCountSteps(result.before, count);
          if (json) {
            writeJson({
              ...result,
              steps: result.steps.map(({ kind, shardIds }) => ({ kind, shard_ids: shardIds })),
              aws_steps: onAws,
            });
            return;
          }
          writeOut(
            `${stream}: ${result.before} → ${result.after} open shards in ${result.steps.length} steps`,
          );
          if (result.steps.length)
            writeOut(
              table(
                ['step', 'closed'],
                result.steps.map((s) => [s.kind, s.shardIds.join(', ')]),
              ),
            );
          writeOut(
            `the local runtime keeps this until its next start, which reshards to the tenant file's shards: ` +
              `change the file to keep it. On AWS: change the file and deploy, ${awsSteps(result.before, onAws)}`,
          );
        } finally {
          admin.destroy();
        }
      },
    );
}

function awsSteps(before: number, steps: readonly number[]): string {
  if (!steps.length) return 'nothing to do';
  if (steps.length === 1) return `one deploy (${before} → ${steps[0]})`;
  return `${steps.length} deploys, one shard count each: ${[before, ...steps].join(' → ')} (UpdateShardCount at most doubles or halves a stream at a time)`;
}

// The tenant file's schema (zod, a peer dependency) loads only here: `leaseq --help` goes without it.
async function readTenant(file: string): Promise<TenantConfig> {
  if (!existsSync(file)) throw new UsageError(`no tenant file ${file}: pass --config`);
  const { parseTenantConfig } = await import('../../functions/core/config.js');
  try {
    return parseTenantConfig(JSON.parse(readFileSync(file, 'utf8')));
  } catch (err) {
    throw new UsageError(`${file}: ${(err as Error).message}`);
  }
}

/** A queue's stream, a declared stream (`shared` included), or a stream's full name. */
export async function resolveStream(tenant: TenantConfig, name: string): Promise<string> {
  const queue = tenant.queues[name];
  if (queue) return queue.stream;
  const { tenantStreams } = await import('../../functions/core/config.js');
  const streams = [...tenantStreams(tenant).keys()];
  const found = streams.find((s) => s === name || s.endsWith(`_${name}`));
  if (found) return found;
  throw new UsageError(
    `${name}: no queue or stream of that name in the tenant file (streams: ${streams.join(', ')})`,
  );
}

function readEndpoints(dataDir: string): { dynamodb: string; kinesis: string; s3: string } {
  const file = join(dataDir, 'endpoints.json');
  if (!existsSync(file))
    throw new UsageError(
      `no local runtime in ${dataDir} (start it with npm start, or pass --data-dir); ` +
        'on AWS, change the stream\'s "shards" in the tenant file and deploy',
    );
  return JSON.parse(readFileSync(file, 'utf8'));
}
