import {
  TUNNEL_GROUP_LABEL_NAME,
  TUNNEL_GROUP_LABEL_VALUE_MAX_BYTES,
  TUNNEL_GROUP_MAX_LABELS,
} from '../../schemas/tunnel-group-backends.js';

/**
 * The command words an OpenSSH client may run at the edge's SSH endpoint (the remote command of
 * `ssh ... edge-host WORDS`). OpenSSH joins its remote arguments with spaces and sends one string;
 * it is split here the way a POSIX shell would (whitespace, '…', "…" and backslash escapes), so a
 * value with spaces needs a second level of quoting: `--metadata "'two words'"`.
 */

/** Exit statuses the SSH user sees. */
export const ExitStatus = {
  ok: 0,
  /** The edge refused the session (ACL, quota, …) or could not open it. */
  refused: 1,
  /** The command line is wrong: unknown word, bad option, no `-R` forward. */
  usage: 2,
} as const;

export const METADATA_MAX_BYTES = 4096;
/** A remote command longer than this is refused before it is parsed. */
export const COMMAND_LINE_MAX_BYTES = 64 * 1024;

export type SshCommand =
  | { kind: 'tunnel'; labels: Record<string, string>; metadata: string | undefined }
  | { kind: 'help' }
  | { kind: 'invalid'; message: string };

/** What `help` prints, and what follows a usage error. */
export function usage(program = 'ssh -p PORT -i KEY'): string {
  return [
    'edgeward edge: open a tunnel with an unmodified OpenSSH client.',
    '',
    'Usage:',
    `  ${program} -R 0:HOST:PORT EDGE-HOST tunnel --label KEY=VALUE [--label KEY=VALUE]... [--metadata TEXT]`,
    `  ${program} EDGE-HOST help`,
    '',
    'Commands:',
    '  tunnel   open a tunnel session whose tunnel group is the given labels, and keep it open until',
    '           ssh exits (Ctrl-C). Connections the edge routes to that tunnel group come in through',
    '           your -R forward and ssh connects them to HOST:PORT. The -R port is not used for',
    '           routing (the edge routes by labels): 0 or any port works.',
    '  help     print this text.',
    '',
    'Options of tunnel:',
    '  --label KEY=VALUE, -l KEY=VALUE   a label of the session (at least one; repeat for more)',
    `  --metadata TEXT, -m TEXT          free text recorded with the session (at most ${METADATA_MAX_BYTES} bytes)`,
    '',
    'ssh sends the remote command as one line that the edge splits like a shell: quote values with',
    `spaces twice, e.g. --metadata "'built from main'".`,
    '',
    'Exit status: 0 after help, 1 when the edge refuses the session, 2 for a wrong command line.',
    '',
  ].join('\n');
}

/**
 * Splits a command line into words like a POSIX shell, without expansions: whitespace separates
 * words, single quotes keep everything literally, double quotes keep everything but `\"` and `\\`,
 * a backslash outside quotes escapes the next character. Throws on an unterminated quote.
 */
export function splitWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const char = line[i] as string;
    if (char === ' ' || char === '\t' || char === '\n' || char === '\r') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i++;
      continue;
    }
    inWord = true;
    if (char === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error('unterminated single quote');
      word += line.slice(i + 1, end);
      i = end + 1;
    } else if (char === '"') {
      i++;
      for (;;) {
        if (i >= line.length) throw new Error('unterminated double quote');
        const inner = line[i] as string;
        if (inner === '"') break;
        const next = line[i + 1];
        if (inner === '\\' && (next === '"' || next === '\\' || next === '$' || next === '`')) {
          word += next;
          i += 2;
        } else {
          word += inner;
          i++;
        }
      }
      i++;
    } else if (char === '\\') {
      if (i + 1 < line.length) word += line[i + 1];
      i += 2;
    } else {
      word += char;
      i++;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** Parses the remote command of one SSH session channel. An empty line is not a command. */
export function parseCommandLine(line: string): SshCommand {
  if (Buffer.byteLength(line, 'utf8') > COMMAND_LINE_MAX_BYTES) {
    return invalid(`the command line is longer than ${COMMAND_LINE_MAX_BYTES} bytes`);
  }
  let words: string[];
  try {
    words = splitWords(line);
  } catch (error) {
    return invalid(`cannot read the command line: ${(error as Error).message}`);
  }
  const [command, ...args] = words;
  switch (command) {
    case undefined:
      return invalid('no command given: run `tunnel --label KEY=VALUE` with a -R forward, or `help`');
    case 'help':
    case '--help':
    case '-h':
      return { kind: 'help' };
    case 'tunnel':
      return parseTunnel(args);
    default:
      return invalid(`unknown command ${quote(command)}: the commands are tunnel and help`);
  }
}

function parseTunnel(args: string[]): SshCommand {
  const labels: Record<string, string> = {};
  let labelCount = 0;
  let metadata: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--help' || arg === '-h') return { kind: 'help' };
    const [option, inline] = splitOption(arg);
    let value: string;
    if (option === '--label' || option === '-l' || option === '--metadata' || option === '-m') {
      if (inline !== undefined) {
        value = inline;
      } else {
        const next = args[i + 1];
        if (next === undefined) return invalid(`${option} needs a value`);
        value = next;
        i++;
      }
    } else if (arg.startsWith('-')) {
      return invalid(`unknown option ${quote(arg)} of tunnel: the options are --label and --metadata`);
    } else {
      return invalid(`unexpected argument ${quote(arg)}: labels are given as --label KEY=VALUE`);
    }

    if (option === '--metadata' || option === '-m') {
      if (metadata !== undefined) return invalid('--metadata is given twice');
      if (Buffer.byteLength(value, 'utf8') > METADATA_MAX_BYTES) {
        return invalid(`--metadata is longer than ${METADATA_MAX_BYTES} bytes`);
      }
      metadata = value;
      continue;
    }
    const equals = value.indexOf('=');
    if (equals < 0) return invalid(`label ${quote(value)} is not KEY=VALUE`);
    const name = value.slice(0, equals);
    const labelValue = value.slice(equals + 1);
    if (!TUNNEL_GROUP_LABEL_NAME.test(name)) {
      return invalid(
        `label name ${quote(name)} must be 1 to 63 characters of letters, digits, '_', '.', '-' and '/'`,
      );
    }
    if (Buffer.byteLength(labelValue, 'utf8') > TUNNEL_GROUP_LABEL_VALUE_MAX_BYTES) {
      return invalid(`the value of label ${name} is longer than ${TUNNEL_GROUP_LABEL_VALUE_MAX_BYTES} bytes`);
    }
    if (Object.hasOwn(labels, name)) return invalid(`label ${name} is given twice`);
    labels[name] = labelValue;
    if (++labelCount > TUNNEL_GROUP_MAX_LABELS) return invalid(`at most ${TUNNEL_GROUP_MAX_LABELS} labels`);
  }
  if (labelCount === 0) {
    return invalid('tunnel needs at least one --label KEY=VALUE: the labels are its tunnel group');
  }
  return { kind: 'tunnel', labels, metadata };
}

/** `--label=k=v` → [`--label`, `k=v`]; anything else → [arg, undefined]. */
function splitOption(arg: string): [string, string | undefined] {
  if (!arg.startsWith('--')) return [arg, undefined];
  const equals = arg.indexOf('=');
  return equals < 0 ? [arg, undefined] : [arg.slice(0, equals), arg.slice(equals + 1)];
}

function invalid(message: string): SshCommand {
  return { kind: 'invalid', message };
}

/** A word as the user typed it, quoted and shortened for a message. */
function quote(word: string): string {
  const short = word.length > 80 ? `${word.slice(0, 77)}...` : word;
  return `'${short}'`;
}

/** `edge=web, team=a` */
export function formatLabels(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([name, value]) => `${name}=${value}`)
    .join(', ');
}
