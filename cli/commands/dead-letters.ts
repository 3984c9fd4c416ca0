import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import type { DeadLetter, Redrive, Replay } from '../../client/index.js';
import {
  type Context,
  collect,
  confirm,
  contextOf,
  type GlobalOptions,
  positiveInt,
  positiveNumber,
  sleep,
  UsageError,
} from '../context.js';
import { fields, percent, preview, table, writeJson, writeOut } from '../output.js';

/** dlq ls|show|purge, redrive and replay (with --follow: a progress bar, Ctrl-C asks to cancel). */

export function registerDeadLetters(program: Command): void {
  const dlq = program.command('dlq').description("a queue's dead letters");

  dlq
    .command('ls')
    .description('dead letters, oldest first')
    .argument('<queue>')
    .option('--limit <n>', 'at most this many (default: all)', positiveInt)
    .action(async (queue: string, opts: { limit?: number }, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const letters = await allDeadLetters(ctx, queue, opts.limit);
      if (ctx.json) {
        writeJson({ messages: letters });
        return;
      }
      if (!letters.length) {
        writeOut('no dead letters');
        return;
      }
      writeOut(
        table(
          ['message_id', 'key', 'dead at', 'attempts', 'last error'],
          letters.map((m) => [
            m.message_id,
            m.key,
            m.dead_at,
            m.attempts.length,
            preview(m.attempts.at(-1)?.error ?? '', 50),
          ]),
        ),
      );
    });

  dlq
    .command('errors')
    .description('the dead letters grouped by their last error, largest group first')
    .argument('<queue>')
    .action(async (queue: string, _opts: unknown, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const found = await ctx.client.dlqErrors(queue, ctx.scope);
      if (ctx.json) {
        writeJson(found);
        return;
      }
      if (!found.groups.length) {
        writeOut('no dead letters');
        return;
      }
      writeOut(
        table(
          ['count', 'last error', 'first dead', 'last dead', 'e.g.'],
          found.groups.map((g) => [
            g.count,
            preview(g.error, 60),
            g.first_dead_at,
            g.last_dead_at,
            g.sample_message_id,
          ]),
        ),
      );
      if (found.truncated) writeOut(`the oldest ${found.grouped} dead letters only`);
    });

  dlq
    .command('show')
    .description('one dead letter and its attempts')
    .argument('<queue>')
    .argument('<message_id>')
    .action(async (queue: string, id: string, _opts: unknown, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const m = await ctx.client.dlqMessage(queue, id, ctx.scope);
      if (ctx.json) {
        writeJson(m);
        return;
      }
      writeOut(
        fields([
          ['message_id', m.message_id],
          ['key', m.key],
          ['enqueued at', m.enqueued_at],
          ['dead at', m.dead_at],
          ['payload', preview(m.payload, 200)],
        ]),
      );
      writeOut(
        table(
          ['attempt', 'consumer', 'reason', 'delivered at', 'failed at', 'error'],
          m.attempts.map((a) => [
            a.attempt,
            a.consumer_id,
            a.reason,
            a.delivered_at,
            a.failed_at,
            preview(a.error ?? '', 60),
          ]),
        ),
      );
    });

  dlq
    .command('purge')
    .description('delete one dead letter, or every one (asks first; --yes to skip)')
    .argument('<queue>')
    .argument('[message_id]')
    .option('-y, --yes', 'do not ask')
    .action(async (queue: string, id: string | undefined, opts: { yes?: boolean }, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const ids = id !== undefined ? [id] : (await allDeadLetters(ctx, queue)).map((m) => m.message_id);
      if (id === undefined && !opts.yes) {
        if (!process.stdin.isTTY)
          throw new UsageError('purging every dead letter needs --yes when there is no terminal to ask');
        if (!(await confirm(`purge all ${ids.length} dead letters of ${queue}?`))) {
          writeOut('nothing purged');
          return;
        }
      }
      for (const m of ids) await ctx.client.dlqPurge(queue, m, ctx.scope);
      if (ctx.json) writeJson({ purged: ids });
      else writeOut(`purged ${ids.length} dead letter(s)`);
    });

  program
    .command('redrive')
    .description('move dead letters back into the queue, rate-limited and filtered')
    .argument('<queue>')
    .option('--rate <n>', 'messages per second (default 10, at most 1000)', positiveNumber)
    .option('--error <text>', 'only dead letters whose error contains this text')
    .option('--ids <ids...>', 'only these message ids (comma-separated or repeated)', collect)
    .option('--dead-after <iso>', 'only dead letters that died after this time')
    .option('--dead-before <iso>', 'only dead letters that died before this time')
    .option('--count', 'count the dead letters the filter matches, and start nothing')
    .option('--follow', 'show progress until done; Ctrl-C asks whether to cancel')
    .option(
      '--status <redrive_id>',
      "show a redrive's progress instead of starting one (with --follow: follow it)",
    )
    .option('--cancel <redrive_id>', 'cancel a running redrive')
    .action(
      async (
        queue: string,
        opts: {
          rate?: number;
          error?: string;
          ids?: string[];
          deadAfter?: string;
          deadBefore?: string;
          count?: boolean;
        } & JobOptions,
        cmd: Command,
      ) =>
        jobCommand(cmd, REDRIVE, queue, opts, async (ctx) => {
          const filter = {
            ...(opts.ids ? { message_ids: opts.ids } : {}),
            ...(opts.error !== undefined ? { error_contains: opts.error } : {}),
            ...(opts.deadAfter !== undefined ? { dead_after: opts.deadAfter } : {}),
            ...(opts.deadBefore !== undefined ? { dead_before: opts.deadBefore } : {}),
          };
          if (opts.count) {
            const matching = await ctx.client.redriveMatching(queue, filter, ctx.scope);
            if (ctx.json) writeJson({ matching });
            else writeOut(`${matching} dead letter(s) match`);
            return undefined;
          }
          return ctx.client.redrive(
            queue,
            { ...(opts.rate !== undefined ? { rate_per_sec: opts.rate } : {}), filter },
            ctx.scope,
          );
        }),
    );

  program
    .command('replay')
    .description('deliver again what the queue accepted in a time window (read back from the log)')
    .argument('<queue>')
    .option('--from <iso>', 'the window start (when the log took the messages)')
    .option('--to <iso>', 'the window end (default now)')
    .option('--rate <n>', 'messages per second (default 10)', positiveNumber)
    .option('--ids <ids...>', 'only these message ids', collect)
    .option('--keys <keys...>', 'only these keys', collect)
    .option('--follow', 'show progress until done; Ctrl-C asks whether to cancel')
    .option('--status <replay_id>', "show a replay's progress instead of starting one")
    .option('--cancel <replay_id>', 'cancel a running replay')
    .action(
      async (
        queue: string,
        opts: {
          from?: string;
          to?: string;
          rate?: number;
          ids?: string[];
          keys?: string[];
        } & JobOptions,
        cmd: Command,
      ) =>
        jobCommand(cmd, REPLAY, queue, opts, async (ctx) => {
          if (!opts.from) throw new UsageError('replay needs --from (or --status / --cancel)');
          return ctx.client.replay(
            queue,
            {
              from: opts.from,
              ...(opts.to !== undefined ? { to: opts.to } : {}),
              ...(opts.rate !== undefined ? { rate_per_sec: opts.rate } : {}),
              filter: {
                ...(opts.ids ? { message_ids: opts.ids } : {}),
                ...(opts.keys ? { keys: opts.keys } : {}),
              },
            },
            ctx.scope,
          );
        }),
    );
}

async function allDeadLetters(ctx: Context, queue: string, limit?: number): Promise<DeadLetter[]> {
  const out: DeadLetter[] = [];
  let cursor: string | undefined;
  do {
    const page = await ctx.client.dlq(
      queue,
      { limit: Math.min(100, limit === undefined ? 100 : limit - out.length), ...(cursor ? { cursor } : {}) },
      ctx.scope,
    );
    out.push(...page.messages);
    cursor = page.next_cursor ?? undefined;
  } while (cursor && (limit === undefined || out.length < limit));
  return out;
}

/** The options every job command takes beside its own. */
interface JobOptions {
  follow?: boolean;
  status?: string;
  cancel?: string;
}

interface JobApi<J extends { status: string }> {
  noun: string;
  id(job: J): string;
  get(id: string): Promise<J>;
  cancel(id: string): Promise<J>;
  progress(job: J): { done: number; total: number; text: string };
}

/** A kind of job: its id, how its progress reads, and the client's calls on one of a queue's. */
interface JobKind<J extends { status: string }> {
  noun: string;
  id(job: J): string;
  progress(job: J): { done: number; total: number; text: string };
  get(ctx: Context, queue: string, id: string): Promise<J>;
  cancel(ctx: Context, queue: string, id: string): Promise<J>;
}

const REDRIVE: JobKind<Redrive> = {
  noun: 'redrive',
  id: (r) => r.redrive_id,
  progress: (r) => ({
    done: r.moved,
    total: r.moved + r.remaining,
    text: `moved ${r.moved}, ${r.remaining} left`,
  }),
  get: (ctx, queue, id) => ctx.client.getRedrive(queue, id, ctx.scope),
  cancel: (ctx, queue, id) => ctx.client.cancelRedrive(queue, id, ctx.scope),
};

const REPLAY: JobKind<Replay> = {
  noun: 'replay',
  id: (r) => r.replay_id,
  progress: (r) => ({
    done: r.shards_done,
    total: r.shards,
    text: `replayed ${r.replayed} of ${r.scanned} read, shards ${r.shards_done}/${r.shards}`,
  }),
  get: (ctx, queue, id) => ctx.client.getReplay(queue, id, ctx.scope),
  cancel: (ctx, queue, id) => ctx.client.cancelReplay(queue, id, ctx.scope),
};

/**
 * A job command on `queue`: `--cancel <id>` cancels that job, `--status <id>` shows it, else
 * `start` starts one (or answers otherwise, and answers nothing); then `--follow` follows it, or
 * one line shows it.
 */
async function jobCommand<J extends { status: string }>(
  cmd: Command,
  kind: JobKind<J>,
  queue: string,
  opts: JobOptions,
  start: (ctx: Context) => Promise<J | undefined>,
): Promise<void> {
  const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
  const api: JobApi<J> = {
    ...kind,
    get: (id) => kind.get(ctx, queue, id),
    cancel: (id) => kind.cancel(ctx, queue, id),
  };
  if (opts.cancel) return show(ctx, api, await api.cancel(opts.cancel));
  const job = opts.status ? await api.get(opts.status) : await start(ctx);
  if (job === undefined) return;
  if (opts.follow) await follow(ctx, api, job);
  else show(ctx, api, job);
}

function show<J extends { status: string }>(ctx: Context, api: JobApi<J>, job: J): void {
  if (ctx.json) {
    writeJson(job);
    return;
  }
  const p = api.progress(job);
  writeOut(`${api.noun} ${api.id(job)}: ${job.status}, ${p.text} (${percent(p.done, p.total)})`);
}

/**
 * Polls a job until it is no longer running: a progress bar on a terminal, a line per change
 * otherwise, a JSON line per poll with `--json`. Ctrl-C asks whether to cancel the job (on a
 * terminal); without one, it stops following and leaves the job running.
 */
async function follow<J extends { status: string }>(ctx: Context, api: JobApi<J>, first: J): Promise<void> {
  const id = api.id(first);
  const interrupted = new AbortController();
  let asking = false;
  const onSigint = () => {
    if (!asking) interrupted.abort();
  };
  process.on('SIGINT', onSigint);
  const bar =
    !ctx.json && process.stderr.isTTY
      ? new SingleBar({
          format: `${api.noun} ${id} [{bar}] {percentage}% | {text}`,
          hideCursor: true,
          stream: process.stderr,
        })
      : undefined;
  let job = first;
  let last = '';
  const render = () => {
    const p = api.progress(job);
    if (ctx.json) writeJson(job);
    else if (bar) {
      if (!bar.isActive) bar.start(Math.max(p.total, 1), p.done, { text: p.text });
      bar.setTotal(Math.max(p.total, 1));
      bar.update(p.done, { text: p.text });
    } else {
      const line = `${api.noun} ${id}: ${job.status}, ${p.text} (${percent(p.done, p.total)})`;
      if (line !== last) writeOut(line);
      last = line;
    }
  };
  try {
    for (;;) {
      render();
      if (job.status !== 'running') break;
      await sleep(500, interrupted.signal);
      if (interrupted.signal.aborted) {
        bar?.stop();
        asking = true;
        const cancel = await confirm(`cancel ${api.noun} ${id}?`);
        asking = false;
        if (cancel) {
          job = await api.cancel(id);
          render();
          break;
        }
        if (!process.stdin.isTTY) {
          process.stderr.write(
            `leaseq: stopped following; ${api.noun} ${id} goes on (--cancel ${id} stops it)\n`,
          );
          break;
        }
        // Kept running: follow on.
        return await follow(ctx, api, await api.get(id));
      }
      job = await api.get(id);
    }
  } finally {
    bar?.stop();
    process.off('SIGINT', onSigint);
  }
  if (!ctx.json && bar) show(ctx, api, job);
}
