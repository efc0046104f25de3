/** Helpers the benchmarks share: child-process hygiene, free ports, the API as the admin, CPU accounting. */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';

/** Clock ticks per second of /proc/PID/stat's times. */
export const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Calls the edgeward API as the admin; resolves with the JSON answer, throws on an error status. */
export function apiClient(apiUrl, adminKey) {
  return async (method, path, body) => {
    const response = await fetch(`${apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${adminKey}`,
        'svc-version': '2',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status} ${text}`);
    return text ? JSON.parse(text) : {};
  };
}

export function env(name, fallback) {
  const value = process.env[name];
  return value === undefined || value === '' ? fallback : value;
}

/** A child exits when its parent goes (stdin closes), so no run leaves processes behind. */
export function exitWithParent() {
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
}

/** CPU seconds the whole machine has been busy (all cores: user, nice, system, irq, softirq). */
export function machineBusySeconds() {
  try {
    const [, user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]
      .trim()
      .split(/\s+/)
      .map(Number);
    return (user + nice + system + irq + softirq) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function waitListening(port, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await new Promise((resolve, reject) => {
        const socket = net.connect({ host: '127.0.0.1', port }, () => {
          socket.destroy();
          resolve();
        });
        socket.once('error', reject);
      });
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(50);
    }
  }
}

/**
 * `node [nodeArgs] dist/cli.js ARGS` under the bench's guard role (`bench.self --role guard`), kept in
 * `bench.children`; `logLine(match)` waits for the first JSON log
 * line (stdout or stderr) that `match` accepts.
 */
export function startCli(bench, args, extraEnv = {}, nodeArgs = []) {
  const { self, dist, children } = bench;
  const child = spawn(
    process.execPath,
    [self, '--role', 'guard', '--', process.execPath, ...nodeArgs, join(dist, 'cli.js'), ...args],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'info', ...extraEnv } },
  );
  children.push(child);
  let output = '';
  const lines = [];
  let partial = '';
  const waiters = new Set();
  const onData = (chunk) => {
    const text = chunk.toString();
    output = (output + text).slice(-8000);
    partial += text;
    const complete = partial.split('\n');
    partial = complete.pop();
    for (const line of complete) {
      if (!line.startsWith('{')) continue;
      try {
        lines.push(JSON.parse(line));
      } catch {}
    }
    for (const waiter of waiters) waiter();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  child.on('exit', () => {
    for (const waiter of waiters) waiter();
  });
  const logLine = (match, timeoutMs = 20_000) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`edgeward ${args[0]}: no matching log line in ${timeoutMs} ms:\n${output}`));
      }, timeoutMs);
      const check = () => {
        const line = lines.find(match);
        if (line || child.exitCode !== null || child.signalCode !== null) {
          waiters.delete(check);
          clearTimeout(timer);
          if (line) resolve(line);
          else
            reject(
              new Error(`edgeward ${args[0]} exited (${child.exitCode ?? child.signalCode}):\n${output}`),
            );
        }
      };
      waiters.add(check);
      check();
    });
  return { child, name: args[0], logLine, output: () => output, lines };
}

/** A free loopback port (the OS picks it; free again once this returns). */
export async function freePort() {
  const probe = net.createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * CPU seconds (user + system, including reaped children) used so far by the processes `roots` and
 * all their descendants (forked sessions, guarded CLIs); undefined without /proc or without roots.
 */
export function treeCpuSeconds(roots) {
  if (!roots?.length || !existsSync('/proc/self/stat')) return undefined;
  const procs = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // Field 2 (comm) is in parentheses and may hold spaces; fields 3… follow the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    procs.set(Number(name), { ppid: Number(fields[1]), ticks });
  }
  const wanted = new Set(roots.filter((pid) => procs.has(pid)));
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, { ppid }] of procs)
      if (!wanted.has(pid) && wanted.has(ppid)) {
        wanted.add(pid);
        grew = true;
      }
  }
  let ticks = 0;
  for (const pid of wanted) ticks += procs.get(pid).ticks;
  return ticks / CLOCK_TICKS;
}
