import { spawn } from 'node:child_process';
import { existsSync, openSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { processAlive } from '../lib/process-alive.js';

/** Starts a process that outlives this one (so `up` can return), its output in a log file. */
export function startDetached(binary: string, args: string[], logFile: string): number {
  const out = openSync(logFile, 'a');
  const child = spawn(binary, args, { detached: true, stdio: ['ignore', out, out] });
  child.unref();
  if (child.pid === undefined) throw new Error(`could not start ${binary}`);
  return child.pid;
}

/** Polls `check` until it holds, failing early (with the log's tail) when the process exits. */
export async function waitFor(
  what: string,
  timeoutMs: number,
  logFile: string,
  pid: number,
  check: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!processAlive(pid)) {
      throw new Error(`${what} exited during start-up; last lines of ${logFile}:\n${tail(logFile)}`);
    }
    try {
      if (await check()) return;
    } catch {
      // Not listening yet.
    }
    await sleep(250);
  }
  throw new Error(
    `${what} was not ready within ${timeoutMs / 1000} s; last lines of ${logFile}:\n${tail(logFile)}`,
  );
}

export function tail(file: string, lines = 25): string {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n') : '(no log)';
}

/** A pid is only ours if its command line still names our folder: pids are reused. */
export function ownedBy(pid: number, dir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir);
  } catch {
    // No /proc (macOS): trust the recorded pid if the process is alive.
    return processAlive(pid);
  }
}

/** SIGTERM, then SIGKILL after `graceMs`, a process started for `dir` (and nothing else). */
export async function stopOwned(pid: number, dir: string, graceMs = 10_000): Promise<void> {
  if (!pid || !processAlive(pid) || !ownedBy(pid, dir)) return;
  process.kill(pid, 'SIGTERM');
  for (let waited = 0; waited < graceMs && processAlive(pid); waited += 100) await sleep(100);
  if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  for (let waited = 0; waited < 5_000 && processAlive(pid); waited += 100) await sleep(100);
}
