import type { Command } from 'commander';
import type { QueueUsage, UsageResponse } from '../../client/index.js';
import { contextOf, type GlobalOptions } from '../context.js';
import { bytes, num, table, usd, writeJson, writeOut } from '../output.js';

/** `usage --from --to [--queue]`: what queues used over a range, for chargeback (GET /usage). */

export function registerUsage(program: Command): void {
  program
    .command('usage')
    .description(
      'what each queue used over a range (at most 93 days) and the total: produced, consumed, stored GB-hours, requests, cost',
    )
    .requiredOption('--from <time>', 'the start, an ISO 8601 time (2026-11-01T00:00:00Z)')
    .requiredOption('--to <time>', 'the end, an ISO 8601 time')
    .option('--queue <name>', 'one queue (scope admin:<queue> suffices); default every queue (admin:*)')
    .action(async (opts: { from: string; to: string; queue?: string }, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const usage = await ctx.client.usage({
        from: opts.from,
        to: opts.to,
        ...(opts.queue !== undefined ? { queue: opts.queue } : {}),
      });
      if (ctx.json) writeJson(usage);
      else writeOut(usageTables(usage));
    });
}

type Figures = UsageResponse['total'];

/** Two tables, volumes and requests by kind, a row per queue and the total, then what is estimated. */
export function usageTables(usage: UsageResponse): string {
  const rows: [string, Figures][] = [
    ...usage.queues.map((q: QueueUsage): [string, Figures] => [q.queue, q]),
    ['total', usage.total],
  ];
  const volumes = table(
    ['queue', 'produced', 'bytes in', 'consumed', 'bytes out', 'log GB-h', 'DLQ GB-h', 'requests', 'cost'],
    rows.map(([name, f]) => [
      name,
      num(f.produced.messages),
      bytes(f.produced.bytes),
      num(f.consumed.messages),
      bytes(f.consumed.bytes),
      gbHours(f.stored_gb_hours.log),
      gbHours(f.stored_gb_hours.dlq),
      num(f.requests.total),
      dollars(f.cost_usd.total),
    ]),
  );
  const kinds = ['produce', 'receive', 'ack', 'nack', 'extend', 'other', 'throttled'] as const;
  const requests = table(
    ['queue', ...kinds],
    rows.map(([name, f]) => [name, ...kinds.map((k) => num(f.requests[k]))]),
  );
  const note =
    `${usage.from} to ${usage.to}. Exact: ${usage.accuracy.exact.join(', ')}; ` +
    `estimated: ${usage.accuracy.estimated.join(', ')} (list prices of ${usage.accuracy.prices_as_of}).`;
  return `${volumes}\n${requests}\n${note}`;
}

/** GB-hours of a small queue are fractions of a thousandth: three significant figures. */
function gbHours(n: number): string {
  return n === 0 ? '0' : n < 0.01 ? n.toPrecision(3) : num(n, 2);
}

function dollars(n: number): string {
  return n > 0 && n < 0.01 ? `$${n.toPrecision(3)}` : usd(n);
}
