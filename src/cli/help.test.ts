import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Command, CommandGroup } from './command.js';
import { COMMANDS, runCli } from './main.js';

/** Runs `edgeward <argv>` in this process; returns its exit code and what it wrote. */
async function run(argv: string[]): Promise<{ code: number | undefined; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const code = await runCli(argv);
    return { code, stdout, stderr };
  } finally {
    vi.restoreAllMocks();
  }
}

/** Every command and subcommand, as typed after `edgeward`. */
function allCommands(list: ReadonlyArray<Command | CommandGroup>): Array<Command | CommandGroup> {
  return list.flatMap((command) =>
    'subcommands' in command ? [command, ...allCommands(command.subcommands)] : [command],
  );
}

afterEach(() => vi.restoreAllMocks());

describe('the CLI answers --help', () => {
  const commands = allCommands(COMMANDS);

  it('lists every command, with --version, exit 0; no command is exit 2', async () => {
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    for (const command of COMMANDS) expect(help.stdout).toMatch(new RegExp(`\\n  ${command.name} +\\S`));
    expect(help.stdout).toContain('edgeward --version');
    expect((await run([])).code).toBe(2);
    const version = await run(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^edgeward \d+\.\d+\.\d+ \(node v\d+/);
  });

  it.each(commands.map((command) => [command.name, command] as const))(
    'edgeward %s --help and -h: exit 0, the usage line and every flag the parser takes',
    async (name, command) => {
      for (const flag of ['--help', '-h']) {
        const { code, stdout, stderr } = await run([...name.split(' '), flag]);
        expect(code, stderr).toBe(0);
        expect(stdout).toMatch(new RegExp(`^usage: edgeward ${name} `));
        if ('flags' in command) {
          // The help is made from the same table the parser reads: nothing it takes goes unsaid.
          for (const flagName of Object.keys(command.flags)) expect(stdout).toContain(`--${flagName}`);
        } else {
          for (const sub of command.subcommands) expect(stdout).toContain(sub.name.split(' ').pop());
        }
        // A help is a page, not a document: the OpenAPI command does not print its 900 KB here.
        expect(stdout.length).toBeLessThan(12_000);
        for (const line of stdout.split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
      }
    },
  );

  it('names an unknown flag or subcommand and points at --help (exit 2)', async () => {
    const flag = await run(['demo', '--no-such-flag']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("edgeward demo: Unknown option '--no-such-flag'");
    expect(flag.stderr).toContain("See 'edgeward demo --help'.");
    const sub = await run(['dev-cluster', 'sideways']);
    expect(sub.code).toBe(2);
    expect(sub.stderr).toContain("edgeward dev-cluster: unknown command 'sideways'");
    const command = await run(['serve']);
    expect(command.code).toBe(2);
    expect(command.stderr).toContain("edgeward: unknown command 'serve'");
    const value = await run(['server', '--port', 'eighty']);
    expect(value.code).toBe(2);
    expect(value.stderr).toContain("--port: 'eighty' is not a port");
  });

  it('turns listeners off with one word everywhere: off', async () => {
    for (const name of ['server', 'edge', 'operator']) {
      const { stdout } = await run([name, '--help']);
      expect(stdout).toContain('off disables');
      expect(stdout).not.toMatch(/\b0 disables\b/);
    }
    const server = await run(['server', '--help']);
    // The in-process edge's flags all carry its prefix; the port range is the server's own too.
    expect(server.stdout).toContain('--edge-drain-timeout S');
    expect(server.stdout).not.toMatch(/\n {2}--drain-timeout/);
    expect(server.stdout).toContain('--tcp-port-range A-B');
  });
});
