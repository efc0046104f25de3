import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One backend server of a TCP frontend: where it listens, and the port of its `/readyz` check. */
export interface HaproxyServer {
  name: string;
  /** Where it listens (127.0.0.1 unless given); its `/readyz` is always on 127.0.0.1. */
  host?: string;
  port: number;
  readyPort: number;
}

export interface HaproxyFrontend {
  name: string;
  /** The port HAProxy listens on (127.0.0.1). */
  port: number;
  servers: HaproxyServer[];
}

export interface Haproxy {
  stop(): Promise<void>;
}

/** Where Debian installs it; `.ci/run` installs the package. */
export const HAPROXY = '/usr/sbin/haproxy';

/** Why a suite that needs HAProxy cannot run here, or undefined. */
export const haproxyMissing = existsSync(HAPROXY)
  ? undefined
  : `${HAPROXY} is not installed (Debian's haproxy package)`;

/**
 * HAProxy from Debian's package as the load balancer in front of several edges: TCP mode (TLS
 * passes through to the edges), round robin, and each server checked by its `/readyz` every
 * 300 ms, so an edge that starts draining leaves rotation within a check or two.
 */
export async function startHaproxy(frontends: HaproxyFrontend[]): Promise<Haproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'edgeward-haproxy-'));
  const lines = [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode tcp',
    '  timeout connect 2s',
    '  timeout client 5m',
    '  timeout server 5m',
    '  timeout check 1s',
    ...frontends.flatMap((frontend) => [
      `frontend ${frontend.name}`,
      `  bind 127.0.0.1:${frontend.port}`,
      `  default_backend ${frontend.name}_edges`,
      `backend ${frontend.name}_edges`,
      '  balance roundrobin',
      '  option httpchk GET /readyz',
      // A refused connection to a dead edge is retried on another server at once.
      '  retries 3',
      '  option redispatch 1',
      ...frontend.servers.map(
        (server) =>
          `  server ${server.name} ${server.host ?? '127.0.0.1'}:${server.port} check addr 127.0.0.1 port ${server.readyPort} inter 300ms fall 1 rise 2`,
      ),
    ]),
  ];
  const config = join(dir, 'haproxy.cfg');
  writeFileSync(config, `${lines.join('\n')}\n`);
  const child: ChildProcess = spawn(HAPROXY, ['-f', config, '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const first = frontends[0];
  if (first) await waitForPort(first.port, child, () => output);
  return {
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`haproxy exited (${child.exitCode}):\n${output()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`haproxy did not listen on ${port} within 10 s:\n${output()}`);
}
