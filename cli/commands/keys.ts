import type { Command } from 'commander';
import { collect, contextOf, type GlobalOptions, UsageError } from '../context.js';
import { table, writeJson, writeOut } from '../output.js';

/** API keys (keys create|ls|revoke) and an ordered queue's parked keys (parked ls, skip). */

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('API keys (scope admin:*)');

  keys
    .command('create')
    .description('make an API key; it is shown once')
    .argument('<name>')
    .requiredOption(
      '--scope <scopes...>',
      'e.g. produce:orders consume:orders admin:* (comma-separated or repeated)',
      collect,
    )
    .option('--sqs', 'also make SQS credentials for it')
    .action(async (name: string, opts: { scope: string[]; sqs?: boolean }, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const made = await ctx.client.createKey({
        name,
        scopes: opts.scope,
        ...(opts.sqs ? { sqs_credentials: true } : {}),
      });
      if (ctx.json) {
        writeJson(made);
        return;
      }
      const lines = [`key ${made.name} (${made.scopes.join(' ')}): ${made.key}`];
      if (made.sqs_credentials) {
        lines.push(`  AWS_ACCESS_KEY_ID=${made.sqs_credentials.access_key_id}`);
        lines.push(`  AWS_SECRET_ACCESS_KEY=${made.sqs_credentials.secret_access_key}`);
      }
      lines.push('keep it now: it is not shown again');
      writeOut(lines.join('\n'));
    });

  keys
    .command('ls')
    .description('API keys and their scopes')
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const list = await ctx.client.listKeys();
      if (ctx.json) {
        writeJson({ keys: list });
        return;
      }
      writeOut(
        table(
          ['name', 'scopes', 'created at', 'by', 'revoked at', 'sqs access key id'],
          list.map((k) => [
            k.name,
            k.scopes.join(' '),
            k.created_at,
            k.created_by,
            k.revoked_at,
            k.sqs_access_key_id,
          ]),
        ),
      );
    });

  keys
    .command('revoke')
    .description('revoke an API key')
    .argument('<name>')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      await ctx.client.revokeKey(name);
      if (ctx.json) writeJson({ revoked: name });
      else writeOut(`revoked ${name}`);
    });

  const parked = program.command('parked').description("an ordered queue's parked keys");
  parked
    .command('ls')
    .description('keys held behind a dead message')
    .argument('<queue>')
    .action(async (queue: string, _opts: unknown, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const list = await ctx.client.parkedKeys(queue, ctx.scope);
      if (ctx.json) {
        writeJson({ keys: list });
        return;
      }
      if (!list.length) {
        writeOut('no parked keys');
        return;
      }
      writeOut(
        table(
          ['key', 'parked at', 'dead message', 'held'],
          list.map((k) => [k.key, k.parked_at, k.dead_message_id, k.held]),
        ),
      );
    });

  program
    .command('skip')
    .description('release a parked key without its dead message (audited)')
    .argument('<queue>')
    .argument('<key>')
    .requiredOption('--reason <text>', 'why (kept in the audit trail)')
    .action(async (queue: string, key: string, opts: { reason: string }, cmd: Command) => {
      if (!opts.reason.trim()) throw new UsageError('--reason must say why');
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const result = await ctx.client.skipKey(queue, key, opts.reason, ctx.scope);
      if (ctx.json) writeJson(result);
      else writeOut(`skipped ${result.key}: ${result.released} held message(s) released`);
    });
}
