import { spawn } from 'node:child_process';
import { existsSync, openSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { basename } from 'node:path';
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

/** A process's arguments (/proc/PID/cmdline), or undefined when it is gone or unreadable. */
function commandLine(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return undefined;
  }
}

/** Whether an argument names `dir` or a path inside it (`/x` is not `/x2`). */
export const namesDir = (args: readonly string[], dir: string): boolean =>
  args.some((arg) => arg === dir || arg.endsWith(`=${dir}`) || arg.includes(`${dir}/`));

/** A pid is only ours if its command line still names our folder: pids are reused. */
export function ownedBy(pid: number, dir: string): boolean {
  if (!existsSync('/proc')) return processAlive(pid); // No /proc (macOS): trust the recorded pid.
  const args = commandLine(pid);
  return args !== undefined && namesDir(args, dir);
}

/** Whether a process runs: exists and is no zombie (a killed child not yet reaped). */
export function processRunning(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()?.[0];
    return state !== undefined && state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** The processes running one of `programs` (by executable name), with their arguments. */
export function processesOf(
  programs: ReadonlySet<string>,
): Array<{ pid: number; program: string; args: string[] }> {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const program = basename(readlinkSync(`/proc/${pid}/exe`)).replace(/ \(deleted\)$/, '');
      const args = commandLine(pid);
      if (programs.has(program) && args) found.push({ pid, program, args });
    } catch {
      // Exited meanwhile, or a kernel thread (no executable).
    }
  }
  return found;
}

/** SIGTERM, then SIGKILL after `graceMs`, a process started for `dir` (and nothing else). */
export async function stopOwned(pid: number, dir: string, graceMs = 10_000): Promise<void> {
  if (!pid || !processAlive(pid) || !ownedBy(pid, dir)) return;
  process.kill(pid, 'SIGTERM');
  for (let waited = 0; waited < graceMs && processAlive(pid); waited += 100) await sleep(100);
  if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  for (let waited = 0; waited < 5_000 && processAlive(pid); waited += 100) await sleep(100);
}
