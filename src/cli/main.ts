import { packageVersion } from '../lib/package-version.js';
import { agentCommand } from './agent-command.js';
import { backupCommand, restoreCommand } from './backup-command.js';
import { cleanupCommand } from './cleanup-command.js';
import { type Command, type CommandGroup, runCommand } from './command.js';
import { crdsCommand } from './crds-command.js';
import { demoCommand } from './demo-command.js';
import { devClusterCommand } from './dev-cluster-command.js';
import { edgeCommand } from './edge-command.js';
import { ensureKeysCommand } from './ensure-keys-command.js';
import { openApiCommand } from './openapi-command.js';
import { operatorCommand } from './operator-command.js';
import { serverCommand } from './server-command.js';
import { toolsCommand } from './tools-command.js';

/**
 * Every command, in the order `edgeward --help` lists them. Each module holds its flags and help
 * and loads what it runs only when it runs: `edgeward server` never loads the operator's
 * Kubernetes client or the edge, which would cost tens of MiB of memory and start-up time.
 */
export const COMMANDS: ReadonlyArray<Command | CommandGroup> = [
  demoCommand,
  serverCommand,
  edgeCommand,
  agentCommand,
  operatorCommand,
  backupCommand,
  restoreCommand,
  crdsCommand,
  openApiCommand,
  ensureKeysCommand,
  cleanupCommand,
  devClusterCommand,
  toolsCommand,
];

function usage(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length)) + 2;
  return `usage: edgeward <command> [flags]
       edgeward --version

Run a tunnel and edge platform from Kubernetes.

commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(width)}${command.summary}`).join('\n')}

'edgeward <command> --help' tells more about each.
`;
}

/** Returns an exit code for commands that finish, undefined for ones that keep running. */
export async function runCli(argv: string[]): Promise<number | undefined> {
  const [name, ...rest] = argv;
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (command) return runCommand(command, rest);
  switch (name) {
    case '--version':
    case '-V':
    case 'version':
      process.stdout.write(`edgeward ${packageVersion()} (node ${process.version})\n`);
      return 0;
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(usage());
      return name === undefined ? 2 : 0;
    default:
      process.stderr.write(`edgeward: unknown command '${name}'\n\n${usage()}`);
      return 2;
  }
}
