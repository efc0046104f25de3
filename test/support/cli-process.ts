import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

export interface CliProcess {
  child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** The first pino line matching `match`, waiting up to `timeoutMs` for it. */
  logLine(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

function parseLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return []; // a line still being written
      }
    });
}

/** `edgeward <args>` as its own OS process, from the sources through tsx (no build needed). */
export function spawnCli(args: string[], env: Record<string, string | undefined> = {}): CliProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const append = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  return {
    child,
    output: () => output,
    logLine(match, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = parseLines(output).find(match);
          if (!line) return false;
          clearTimeout(timer);
          child.stdout?.off('data', check);
          child.stderr?.off('data', check);
          child.off('exit', exited);
          resolve(line);
          return true;
        };
        const exited = (code: number | null) => {
          if (!check()) reject(new Error(`edgeward ${args[0]} exited (${code}) first:\n${output}`));
        };
        const timer = setTimeout(() => {
          child.stdout?.off('data', check);
          child.stderr?.off('data', check);
          reject(new Error(`no matching log line from edgeward ${args[0]} in ${timeoutMs} ms:\n${output}`));
        }, timeoutMs);
        if (check()) return;
        child.stdout?.on('data', check);
        child.stderr?.on('data', check);
        child.once('exit', exited);
      });
    },
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill(signal);
      await exited;
    },
  };
}

/**
 * The arguments of `edgeward agent` as the tests run it: dialing `edgeAddr`, trusting the edge's
 * tunnel certificate `edgeCa` (issued to `localhost`), binding `label` and carrying to `forward`;
 * `extra` last.
 */
export function agentArgs(options: {
  edgeAddr: string;
  edgeCa: string;
  label: string;
  forward: string;
  extra?: string[];
}): string[] {
  return [
    'agent',
    '--edge-addr',
    options.edgeAddr,
    '--edge-ca',
    options.edgeCa,
    '--server-name',
    'localhost',
    '--label',
    options.label,
    '--forward',
    options.forward,
    ...(options.extra ?? []),
  ];
}

/** SIGKILLs every child still running and waits for each to close; empties `children`. */
export async function killAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'close');
      child.kill('SIGKILL');
      await exited;
    }),
  );
}
