import { existsSync, readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { QueueStats } from '../../client/index.js';
import { collect, contextOf, type GlobalOptions, positiveNumber, sleep, UsageError } from '../context.js';
import { bytes, duration, num, table, writeJson, writeOut } from '../output.js';

/** `stats [queue] [--watch]`: one row per queue, refreshed in place. */

export function registerStats(program: Command): void {
  program
    .command('stats')
    .description("queues' figures as a table; without a queue, every queue of --queues or the tenant file")
    .argument('[queue]')
    .option('--queues <names>', 'queues to show (comma-separated or repeated)', collect)
    .option(
      '--config <file>',
      'the tenant file to take queue names from',
      process.env.LEASEQ_CONFIG ?? 'tenants/local.json',
    )
    .option('--watch [seconds]', 'refresh every this many seconds (default 2) until Ctrl-C', positiveNumber)
    .action(
      async (
        queue: string | undefined,
        opts: { queues?: string[]; config: string; watch?: number | true },
        cmd: Command,
      ) => {
        const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
        const queues = queue ? [queue] : (opts.queues ?? queuesOfTenantFile(opts.config));
        const fetchAll = async () =>
          Promise.all(queues.map(async (q) => ({ queue: q, stats: await ctx.client.stats(q, ctx.scope) })));
        if (opts.watch === undefined) {
          const all = await fetchAll();
          if (ctx.json) writeJson(queue ? all[0]?.stats : { queues: all });
          else writeOut(statsTable(all));
          return;
        }
        const everyMs = (opts.watch === true ? 2 : opts.watch) * 1000;
        const stop = new AbortController();
        process.once('SIGINT', () => stop.abort());
        while (!stop.signal.aborted) {
          const all = await fetchAll();
          if (ctx.json) writeJson({ at: new Date().toISOString(), queues: all });
          else if (process.stdout.isTTY)
            process.stdout.write(
              `\x1b[2J\x1b[H${new Date().toISOString()}  (Ctrl-C to stop)\n${statsTable(all)}\n`,
            );
          else writeOut(`${new Date().toISOString()}\n${statsTable(all)}`);
          await sleep(everyMs, stop.signal);
        }
      },
    );
}

export function queuesOfTenantFile(file: string): string[] {
  if (!existsSync(file))
    throw new UsageError(`name a queue, or --queues, or a tenant file with --config (${file} not found)`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`${file}: not valid JSON: ${(err as Error).message}`);
  }
  const queues = (raw as { queues?: Record<string, unknown> })?.queues;
  if (!queues || typeof queues !== 'object') throw new UsageError(`${file}: no "queues"`);
  return Object.keys(queues);
}

/** Consumer stats (`--consumer`) lack some queue figures: those cells stay empty. */
export function statsTable(
  all: { queue: string; stats: Partial<QueueStats> & { ready?: number } }[],
): string {
  return table(
    [
      'queue',
      'depth',
      'in flight',
      'delayed',
      'held',
      'dlq',
      'parked',
      'oldest',
      'produced',
      'acked',
      'stored',
      'drain',
      'paused',
    ],
    all.map(({ queue, stats: s }) => [
      queue,
      opt(s.depth ?? s.ready),
      opt(s.in_flight),
      opt(s.delayed),
      opt(s.held),
      opt(s.dlq_depth),
      opt(s.parked_keys),
      s.oldest_unacked_age_seconds === undefined ? '' : duration(s.oldest_unacked_age_seconds),
      opt(s.produced_total),
      opt(s.acked_total),
      s.stored_bytes === undefined ? '' : bytes(s.stored_bytes),
      drainText(s.drain),
      s.paused ? `yes (${s.paused.reason})` : s.paused === null ? 'no' : '',
    ]),
  );
}

function opt(n: number | undefined): string {
  return n === undefined ? '' : num(n);
}

export function drainText(drain: QueueStats['drain'] | undefined): string {
  if (!drain) return '';
  if (drain.state === 'draining') return `draining, ETA ${duration(drain.eta_seconds)}`;
  return drain.state.replace('_', ' ');
}
