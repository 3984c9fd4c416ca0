import type { Command } from 'commander';
import { contextOf, type GlobalOptions, positiveInt } from '../context.js';
import { fields, preview, table, writeJson, writeOut } from '../output.js';

/** trace (a message's timeline) and audit (who did what to a queue). */

export function registerInspect(program: Command): void {
  program
    .command('trace')
    .description('where a message is and everything that happened to it, as a timeline')
    .argument('<queue>')
    .argument('<message_id>')
    .action(async (queue: string, id: string, _opts: unknown, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const t = await ctx.client.trace(queue, id, ctx.scope);
      if (ctx.json) {
        writeJson(t);
        return;
      }
      writeOut(
        fields([
          ['message_id', t.message_id],
          ['state', t.state],
          ['shard', t.shard],
          ['sequence', t.sequence],
          ['enqueued at', t.enqueued_at],
          ...(t.traceparent ? ([['traceparent', t.traceparent]] as [string, string][]) : []),
          ...(t.replay_id ? ([['replay', t.replay_id]] as [string, string][]) : []),
        ]),
      );
      const events = [...t.events].sort((a, b) => a.at.localeCompare(b.at));
      const start = events[0] ? Date.parse(events[0].at) : 0;
      writeOut(
        table(
          ['at', '+', 'event', 'detail'],
          events.map((e) => [
            e.at,
            `+${((Date.parse(e.at) - start) / 1000).toFixed(3)} s`,
            e.event,
            preview(e.detail, 80),
          ]),
        ),
      );
    });

  program
    .command('audit')
    .description('who skipped, purged, redrove, replayed or paused what, when and why')
    .argument('<queue>')
    .option('--limit <n>', 'at most this many entries (1-500)', positiveInt)
    .action(async (queue: string, opts: { limit?: number }, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const entries = await ctx.client.audit(queue, opts.limit !== undefined ? { limit: opts.limit } : {});
      if (ctx.json) {
        writeJson({ entries });
        return;
      }
      if (!entries.length) {
        writeOut('no audit entries');
        return;
      }
      writeOut(
        table(
          ['at', 'action', 'actor', 'consumer', 'target', 'reason', 'detail'],
          entries.map((e) => [
            e.at,
            e.action,
            e.actor,
            e.consumer,
            e.target,
            e.reason,
            e.detail ? preview(e.detail, 50) : '',
          ]),
        ),
      );
    });
}
