import { parseArgs } from 'node:util';
import type { Flag, Flags, FlagValues } from '../lib/flags.js';

/**
 * A command or a subcommand. `run` gets the parsed flags and positionals and returns an exit code,
 * or undefined for a command that keeps running (a server) until a signal.
 */
export interface Command<F extends Flags = Flags> {
  /** As typed after `edgeward`: `server`, `dev-cluster up`. */
  name: string;
  summary: string;
  /** What follows the name in the usage line (default `[flags]`). */
  usage?: string;
  /** Paragraphs shown between the usage line and the flags. */
  description?: string;
  flags: F;
  /** Whether positional arguments are taken (named in `usage`). */
  positionals?: boolean;
  /** Paragraphs shown after the flags: environment variables, exit codes. */
  footer?: string;
  run(values: FlagValues<F>, positionals: string[]): Promise<number | undefined>;
}

/** A command made of subcommands: `edgeward dev-cluster up`. */
export interface CommandGroup {
  name: string;
  summary: string;
  description?: string;
  subcommands: ReadonlyArray<Command | CommandGroup>;
}

/** A mistake in how a command was called: exit code 2 and a pointer to `--help`. */
export class UsageError extends Error {}

/** Declares a command; the identity function, there for the flag table's type inference. */
export function defineCommand<const F extends Flags>(command: Command<F>): Command<F> {
  return command;
}

const HELP_FLAGS = new Set(['--help', '-h']);
const FLAG_COLUMN = 28;
const HELP_WIDTH = 100;

function wantsHelp(argv: string[]): boolean {
  for (const arg of argv) {
    if (arg === '--') return false;
    if (HELP_FLAGS.has(arg)) return true;
  }
  return false;
}

/** Words of `text` in lines of at most `width` columns (a longer word gets a line of its own). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(' ')) {
      if (line !== '' && line.length + 1 + word.length > width) {
        lines.push(line);
        line = word;
      } else {
        line = line === '' ? word : `${line} ${word}`;
      }
    }
    lines.push(line);
  }
  return lines;
}

function flagLine(name: string, flag: Flag): string {
  const label = `--${name}${flag.short ? `, -${flag.short}` : ''}${flag.value ? ` ${flag.value}` : ''}`;
  const defaultText = flag.defaultText ?? flag.default;
  const text = defaultText === undefined ? flag.help : `${flag.help} (default ${defaultText})`;
  const [first = '', ...rest] = wrap(text, HELP_WIDTH - FLAG_COLUMN);
  const lines =
    label.length >= FLAG_COLUMN - 2
      ? [`  ${label}`, `${' '.repeat(FLAG_COLUMN)}${first}`]
      : [`  ${label.padEnd(FLAG_COLUMN - 2)}${first}`];
  for (const line of rest) lines.push(`${' '.repeat(FLAG_COLUMN)}${line}`);
  return lines.join('\n');
}

export function commandHelp(command: Command | CommandGroup): string {
  const parts: string[] = [];
  if ('subcommands' in command) {
    parts.push(`usage: edgeward ${command.name} <command> [flags]`);
    if (command.description) parts.push(wrap(command.description, HELP_WIDTH).join('\n'));
    const width = Math.max(...command.subcommands.map((sub) => lastWord(sub.name).length)) + 2;
    parts.push(
      `commands:\n${command.subcommands.map((sub) => `  ${lastWord(sub.name).padEnd(width)}${sub.summary}`).join('\n')}`,
    );
    parts.push(`'edgeward ${command.name} <command> --help' tells more about each.`);
  } else {
    parts.push(`usage: edgeward ${command.name} ${command.usage ?? '[flags]'}`);
    parts.push(wrap(command.description ?? command.summary, HELP_WIDTH).join('\n'));
    const flags = Object.entries(command.flags).map(([name, flag]) => flagLine(name, flag));
    flags.push(flagLine('help', { type: 'boolean', short: 'h', help: 'this help' }));
    parts.push(`flags:\n${flags.join('\n')}`);
    if (command.footer) parts.push(command.footer);
  }
  return `${parts.join('\n\n')}\n`;
}

function lastWord(name: string): string {
  return name.slice(name.lastIndexOf(' ') + 1);
}

/**
 * Runs a command or group with its arguments: `--help`/`-h` anywhere prints the help (exit 0),
 * a flag the command does not take or a bad value exits 2 naming it.
 */
export async function runCommand(
  command: Command | CommandGroup,
  argv: string[],
): Promise<number | undefined> {
  try {
    if ('subcommands' in command) {
      const [name, ...rest] = argv;
      if (name === undefined || HELP_FLAGS.has(name) || name === 'help') {
        process.stdout.write(commandHelp(command));
        return name === undefined ? 2 : 0;
      }
      const sub = command.subcommands.find((candidate) => lastWord(candidate.name) === name);
      if (!sub) throw new UsageError(`unknown command '${name}'`);
      return await runCommand(sub, rest);
    }
    if (wantsHelp(argv)) {
      process.stdout.write(commandHelp(command));
      return 0;
    }
    let parsed: { values: Record<string, unknown>; positionals: string[] };
    try {
      parsed = parseArgs({
        args: argv,
        options: command.flags,
        strict: true,
        allowPositionals: command.positionals ?? false,
      });
    } catch (error) {
      // node:util names the flag: "Unknown option '--x'", "Option '--port <value>' argument missing".
      throw new UsageError(error instanceof Error ? error.message : String(error), { cause: error });
    }
    return await command.run(parsed.values as FlagValues<Flags>, parsed.positionals);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(
      `edgeward ${command.name}: ${error.message}\nSee 'edgeward ${command.name} --help'.\n`,
    );
    return 2;
  }
}
