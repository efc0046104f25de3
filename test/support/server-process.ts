import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  listenUrl: string;
  stdout(): string;
  /** SIGKILL: no shutdown hook runs, as in a crash or an OOM kill. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** How to start the CLI: through tsx from the sources (no build needed), or an installed `dist/cli.js`. */
const FROM_SOURCES = ['--import', 'tsx', CLI];

/** Runs `edgeward server` as a separate OS process. */
export async function spawnServer(
  args: string[],
  env: Record<string, string | undefined> = {},
  cli: string[] = FROM_SOURCES,
  /** A command the server runs under (`strace -f ...`), its arguments first. */
  wrapper: string[] = [],
): Promise<ServerProcess> {
  const command = [...wrapper, process.execPath, ...cli, 'server', '--port', '0', ...args];
  const child = spawn(command[0] as string, command.slice(1), {
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const listenUrl = await new Promise<string>((resolve, reject) => {
    // A loaded CI machine takes a while to load the sources through tsx; one that never starts is
    // killed, so a failed test leaves no server behind.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start in 60 s\n${out}\n${err}`));
    }, 60_000);
    const check = () => {
      const match = /"listen":"([^"]+)"/.exec(out);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}\n${out}\n${err}`));
    });
  });
  return {
    child,
    listenUrl,
    stdout: () => out,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill(signal);
      await exited;
    },
  };
}
