import { Command, CommanderError, Option } from 'commander';
import { registerAlarms } from './commands/alarms.js';
import { registerDeadLetters } from './commands/dead-letters.js';
import { registerInspect } from './commands/inspect.js';
import { registerKeys } from './commands/keys.js';
import { registerMessages } from './commands/messages.js';
import { registerPause } from './commands/pause.js';
import { registerReshard } from './commands/reshard.js';
import { registerSize } from './commands/size.js';
import { registerStart } from './commands/start.js';
import { registerStats } from './commands/stats.js';
import { registerUsage } from './commands/usage.js';
import { DEFAULT_URL, reportFailure, UsageError } from './context.js';

/**
 * The `leaseq` program: the command line over leaseq/client. Exit codes: 0 ok, 1 the service said no (its
 * code and message in one line on stderr), 2 a usage mistake (one line, no stack trace).
 */

export function buildProgram(): Command {
  const program = new Command('leaseq')
    .description(
      'a durable work queue: the command line of its HTTP API, the local runtime and a sizing calculator',
    )
    .addOption(new Option('--url <url>', `the API (default $LEASEQ_URL or ${DEFAULT_URL})`))
    .addOption(
      new Option('--key <key>', 'the API key (default $LEASEQ_KEY, or .leaseq/admin-key when it exists)'),
    )
    .addOption(
      new Option('--consumer <name>', "the owner's tools on one Lambda consumer's state (?consumer=)"),
    )
    .option('--json', 'answer in JSON, for scripts')
    .showHelpAfterError(false)
    .configureOutput({
      // Commander's own errors: one line, prefixed, whatever its suggestions add.
      outputError: (text, write) =>
        write(
          `leaseq: ${text
            .replace(/^error: /, '')
            .replace(/\s*\n\s*/g, ' ')
            .trim()}\n`,
        ),
    })
    .exitOverride();
  registerStart(program);
  registerMessages(program);
  registerStats(program);
  registerDeadLetters(program);
  registerInspect(program);
  registerPause(program);
  registerKeys(program);
  registerSize(program);
  registerReshard(program);
  registerUsage(program);
  registerAlarms(program);
  return program;
}

export async function run(argv: string[]): Promise<number> {
  const program = buildProgram();
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are not errors; everything else commander refuses is a usage mistake.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      if (err.code === 'commander.help') return err.exitCode === 0 ? 0 : 2;
      return 2;
    }
    return reportFailure(
      err instanceof Error && err.name === 'ZodError' ? new UsageError(err.message) : err,
      json,
      urlOf(argv),
    );
  }
}

function urlOf(argv: string[]): string | undefined {
  const i = argv.indexOf('--url');
  return i >= 0 ? argv[i + 1] : (process.env.LEASEQ_URL ?? DEFAULT_URL);
}
