import type { Command } from 'commander';
import type { AlarmsResponse } from '../../client/index.js';
import { contextOf, type GlobalOptions } from '../context.js';
import { table, writeJson, writeOut } from '../output.js';

/** `alarms`: the queues' alarms above their threshold now (GET /alarms). */

export function registerAlarms(program: Command): void {
  program
    .command('alarms')
    .description("the queues' alarms above their threshold now, as the sweep last evaluated them")
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const answer = await ctx.client.alarms();
      if (ctx.json) writeJson(answer);
      else writeOut(alarmsTable(answer));
    });
}

export function alarmsTable(answer: AlarmsResponse): string {
  if (!answer.alarms.length) return 'No alarm is above its threshold.';
  return table(
    ['queue', 'alarm', 'state', 'since', 'pages'],
    answer.alarms.map((a) => [a.queue, a.kind, a.state, a.since, a.pages ? 'yes' : 'no']),
  );
}
