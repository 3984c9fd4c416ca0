import type { Command } from 'commander';
import { contextOf, type GlobalOptions } from '../context.js';
import { writeJson, writeOut } from '../output.js';

/** pause and resume: the incident control on a queue's deliveries (audited; produce goes on). */

export function registerPause(program: Command): void {
  program
    .command('pause')
    .description(
      "stop a queue's deliveries (receive answers nothing, Lambda consumers hold); produce goes on",
    )
    .argument('<queue>')
    .requiredOption('--reason <text>', 'why: it goes into the audit trail')
    .action(async (queue: string, opts: { reason: string }, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const paused = await ctx.client.pause(queue, opts.reason);
      if (ctx.json) writeJson({ paused });
      else writeOut(`${queue} paused at ${paused.paused_at} by ${paused.actor}: ${paused.reason}`);
    });

  program
    .command('resume')
    .description("start a paused queue's deliveries again")
    .argument('<queue>')
    .option('--reason <text>', 'why, for the audit trail')
    .action(async (queue: string, opts: { reason?: string }, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const resumed = await ctx.client.resume(
        queue,
        opts.reason !== undefined ? { reason: opts.reason } : {},
      );
      if (ctx.json) writeJson({ resumed });
      else writeOut(`${queue} resumed (it was paused at ${resumed.paused_at} by ${resumed.actor})`);
    });
}
