import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { ProduceMessage } from '../../client/index.js';
import {
  contextOf,
  type GlobalOptions,
  nonNegativeNumber,
  parseJson,
  positiveInt,
  UsageError,
} from '../context.js';
import { preview, table, writeJson, writeOut } from '../output.js';

/** send, receive, ack, nack: the producer's and consumer's calls. */

const BATCH = 500;

interface SendOptions {
  file?: string;
  messages?: boolean;
  id?: string;
  messageKey?: string;
  delay?: number;
}

export function registerMessages(program: Command): void {
  program
    .command('send')
    .description(
      'produce messages: one payload as an argument, or JSON lines (or a JSON array) from --file or stdin',
    )
    .argument('<queue>')
    .argument('[payload]', 'the payload, as JSON')
    .option('-f, --file <file>', 'a file of payloads: JSON lines, or one JSON array')
    .option(
      '--messages',
      'each input is a whole message {payload, key?, message_id?, headers?, delay_seconds?}',
    )
    .option('--id <message_id>', 'the message id (one payload only); repeated sends of it answer duplicate')
    .option('--message-key <key>', "the message's key (required on ordered queues)")
    .option('--delay <seconds>', 'hold the messages back', nonNegativeNumber)
    .action(async (queue: string, payload: string | undefined, opts: SendOptions, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const inputs = await readInputs(payload, opts.file);
      if (!inputs.length) throw new UsageError('nothing to send: give a payload, --file or lines on stdin');
      if (opts.id !== undefined && inputs.length > 1) throw new UsageError('--id takes one payload only');
      const messages = inputs.map(({ value, where }) => toMessage(value, where, opts));
      const results = [];
      for (let i = 0; i < messages.length; i += BATCH) {
        results.push(...(await ctx.client.produce(queue, messages.slice(i, i + BATCH))));
      }
      if (ctx.json) writeJson({ results });
      else
        writeOut(
          table(
            ['message_id', 'status', 'error'],
            results.map((r) => [r.message_id, r.status, r.error?.message]),
          ),
        );
      const failed = results.filter((r) => r.status === 'failed');
      if (failed.length) {
        const first = failed[0]?.error;
        throw new Error(`${failed.length} of ${results.length} failed (${first?.code}: ${first?.message})`);
      }
    });

  program
    .command('receive')
    .description('lease messages (and print their receipts); --ack acks them once printed')
    .argument('<queue>')
    .option('-n, --max <n>', 'at most this many (1-100)', positiveInt, 10)
    .option('-w, --wait <seconds>', 'long poll up to this long (0-20)', nonNegativeNumber, 1)
    .option('--lease <seconds>', 'lease length', positiveInt)
    .option('--ack', 'ack what was received')
    .action(
      async (
        queue: string,
        opts: { max: number; wait: number; lease?: number; ack?: boolean },
        cmd: Command,
      ) => {
        const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
        const messages = await ctx.client.receive(queue, {
          max_messages: opts.max,
          wait_seconds: opts.wait,
          ...(opts.lease !== undefined ? { lease_seconds: opts.lease } : {}),
        });
        const acks =
          opts.ack && messages.length
            ? await ctx.client.ack(
                queue,
                messages.map((m) => m.receipt),
              )
            : [];
        if (ctx.json) {
          writeJson(opts.ack ? { messages, acks } : { messages });
          return;
        }
        if (!messages.length) {
          writeOut('no messages');
          return;
        }
        writeOut(
          table(
            ['message_id', 'attempt', 'key', 'payload', opts.ack ? 'ack' : 'receipt'],
            messages.map((m, i) => [
              m.message_id,
              m.attempt,
              m.key,
              preview(m.payload),
              opts.ack ? acks[i]?.status : m.receipt,
            ]),
          ),
        );
      },
    );

  program
    .command('ack')
    .description('ack receipts')
    .argument('<queue>')
    .argument('<receipts...>')
    .action(async (queue: string, receipts: string[], _opts: unknown, cmd: Command) => {
      const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
      const results = await ctx.client.ack(queue, receipts);
      if (ctx.json) writeJson({ results });
      else
        writeOut(
          table(
            ['receipt', 'status'],
            results.map((r) => [preview(r.receipt, 40), r.status]),
          ),
        );
      const bad = results.filter((r) => r.status !== 'acked');
      if (bad.length)
        throw new Error(`${bad.length} of ${results.length} receipts not acked (${bad[0]?.status})`);
    });

  program
    .command('nack')
    .description('fail a delivery: retried after the backoff tier, or dead-lettered with --dead')
    .argument('<queue>')
    .argument('<receipt>')
    .option('--error <text>', 'why it failed (kept in the dead letter)')
    .option('--dead', 'not retryable: dead-letter it now')
    .option('--retry-after <seconds>', 'retry after this long instead of the tier', nonNegativeNumber)
    .action(
      async (
        queue: string,
        receipt: string,
        opts: { error?: string; dead?: boolean; retryAfter?: number },
        cmd: Command,
      ) => {
        const ctx = contextOf(cmd.optsWithGlobals<GlobalOptions>());
        const result = await ctx.client.nack(queue, receipt, {
          ...(opts.error !== undefined ? { error: opts.error } : {}),
          ...(opts.dead ? { retryable: false } : {}),
          ...(opts.retryAfter !== undefined ? { retry_after_seconds: opts.retryAfter } : {}),
        });
        if (ctx.json) writeJson(result);
        else
          writeOut(
            `${result.status} (attempt ${result.attempt}${result.next_attempt_at ? `, next at ${result.next_attempt_at}` : ''})`,
          );
      },
    );
}

interface Input {
  value: unknown;
  where: string;
}

async function readInputs(payload: string | undefined, file: string | undefined): Promise<Input[]> {
  if (payload !== undefined && file !== undefined) throw new UsageError('give a payload or --file, not both');
  if (payload !== undefined) return [{ value: parseJson(payload, 'payload'), where: 'payload' }];
  let text: string;
  let name: string;
  if (file !== undefined) {
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new UsageError(
        `${file}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    name = file;
  } else {
    if (process.stdin.isTTY)
      throw new UsageError('nothing to send: give a payload, --file or lines on stdin');
    text = await readStdin();
    name = 'stdin';
  }
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    const all = parseJson(trimmed, name) as unknown[];
    return all.map((value, i) => ({ value, where: `${name}[${i}]` }));
  }
  return text
    .split('\n')
    .map((line, i) => ({ line, where: `${name}:${i + 1}` }))
    .filter(({ line }) => line.trim() !== '')
    .map(({ line, where }) => ({ value: parseJson(line, where), where }));
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function toMessage(value: unknown, where: string, opts: SendOptions): ProduceMessage {
  let message: ProduceMessage;
  if (opts.messages) {
    if (!value || typeof value !== 'object' || Array.isArray(value) || !('payload' in value)) {
      throw new UsageError(`${where}: a message is an object with a "payload"`);
    }
    message = { ...(value as ProduceMessage) };
  } else {
    message = { payload: value };
  }
  if (opts.id !== undefined) message.message_id = opts.id;
  if (opts.messageKey !== undefined) message.key = opts.messageKey;
  if (opts.delay !== undefined) message.delay_seconds = opts.delay;
  return message;
}
