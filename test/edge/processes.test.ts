import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Server as HttpServer } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sshTunnelArgs } from '../support/admin-api.js';
import { agentArgs, type CliProcess, spawnCli } from '../support/cli-process.js';
import { until } from '../support/eventually.js';
import { namedService } from '../support/loopback-server.js';
import { OpenSshWorkspace } from '../support/openssh.js';

/**
 * The product as it is installed: `edgeward server --edge`, a separate `edgeward edge`, our agent
 * as processes, and the unmodified OpenSSH client as an agent; curl as the public client. Faults are
 * real: SIGKILL of an agent and of an edge.
 */
const run = promisify(execFile);
const ADMIN_KEY = 'ewk_processes_test_admin_key_0123456789abcdef';

let dataDir: string;
let server: CliProcess;
let apiUrl: string;
let tunnelPort: number;
let sshPort: number;
let edgeKey: string;
const services: HttpServer[] = [];
const processes: CliProcess[] = [];
const sshClients: ChildProcess[] = [];
let ssh: OpenSshWorkspace;

const localService = (name: string) => namedService(name, services);

async function api(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_KEY}`,
      'svc-version': '2',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status >= 300 && response.status !== 404)
    throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? (JSON.parse(text) as Record<string, unknown>) : { status: response.status };
}

/** A TCP edge on a new reserved address, carrying to the tunnel group `labels`; its port. */
async function tcpEdge(labels: Record<string, string>): Promise<number> {
  const backend = await api('POST', '/backends/tunnel_group', { labels });
  const addr = await api('POST', '/reserved_addrs', {});
  await api('POST', '/edges/tcp', { hostports: [addr.addr], backend: { backend_id: backend.id } });
  const port = Number(String(addr.addr).split(':').pop());
  // The edge process hears of the new edge from the server's feed and then binds its port: agents
  // can be connected before it has (seen in CI), so wait for the port rather than race it.
  await until(
    'the edge listening on its port',
    () => accepts(port),
    (accepted) => accepted,
  );
  return port;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function startAgent(
  token: string,
  label: string,
  servicePort: number,
  addr = `127.0.0.1:${tunnelPort}`,
): CliProcess {
  const agent = spawnCli(
    agentArgs({
      edgeAddr: addr,
      edgeCa: join(dataDir, 'edge', 'tunnel.crt'),
      label,
      forward: `http://127.0.0.1:${servicePort}`,
      extra: ['--no-exec-restart'],
    }),
    { EDGEWARD_AUTHTOKEN: token },
  );
  processes.push(agent);
  return agent;
}

async function curl(port: number): Promise<string | undefined> {
  try {
    const { stdout } = await run('curl', ['-sS', '--max-time', '3', `http://127.0.0.1:${port}/`]);
    return stdout;
  } catch {
    return undefined;
  }
}

async function sessions(): Promise<Array<Record<string, unknown>>> {
  return (await api('GET', '/tunnel_sessions')).tunnel_sessions as Array<Record<string, unknown>>;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'edgeward-processes-'));
  ssh = new OpenSshWorkspace();
  server = spawnCli(
    [
      'server',
      '--data-dir',
      dataDir,
      '--port',
      '0',
      '--edge',
      '--edge-tunnel-addr',
      '127.0.0.1:0',
      '--edge-ssh-addr',
      '127.0.0.1:0',
      '--edge-tls-addr',
      'off',
    ],
    { EDGEWARD_ADMIN_API_KEY: ADMIN_KEY },
  );
  processes.push(server);
  const listening = await server.logLine((line) => line.msg === 'edgeward server ready');
  apiUrl = String(listening.listen);
  const ready = await server.logLine((line) => line.msg === 'edgeward edge ready');
  tunnelPort = Number(ready.tunnelPort);
  sshPort = Number(ready.sshPort);
  const printed = spawnCli(['server', '--data-dir', dataDir, '--print-edge-key']);
  await once(printed.child, 'exit');
  edgeKey = printed.output().trim();
}, 60_000);

afterAll(async () => {
  for (const client of sshClients) client.kill('SIGKILL');
  for (const child of processes.reverse()) await child.kill('SIGTERM');
  for (const service of services) service.close();
  ssh?.remove();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('edgeward as processes', () => {
  it('spreads connections over two agents of a group, and fails over when one is killed -9', async () => {
    const credential = await api('POST', '/credentials', { acl: ['bind:app=*'] });
    const port = await tcpEdge({ app: 'pair' });
    const one = startAgent(String(credential.token), 'app=pair', await localService('one'));
    const two = startAgent(String(credential.token), 'app=pair', await localService('two'));
    const first = await one.logLine((line) => line.msg === 'session opened');
    await two.logLine((line) => line.msg === 'session opened');
    await until(
      'both sessions listed',
      sessions,
      (list) =>
        list.filter((s) => s.credential && (s.credential as { id: string }).id === credential.id).length ===
        2,
    );

    const answers = new Set<string | undefined>();
    for (let i = 0; i < 6; i++) answers.add(await curl(port));
    expect([...answers].sort()).toEqual(['one', 'two']);

    await one.kill('SIGKILL');
    const killedAt = Date.now();
    await until(
      'the killed agent’s session gone from the API',
      sessions,
      (list) => !list.some((s) => s.id === first.sessionId),
      { timeoutMs: 5000 },
    );
    expect(Date.now() - killedAt).toBeLessThan(5000);
    for (let i = 0; i < 4; i++) expect(await curl(port)).toBe('two');
  });

  it('takes the unmodified OpenSSH client as an agent: ssh -R … tunnel --label', async () => {
    const key = ssh.keygen('ed25519');
    const credential = await api('POST', '/ssh_credentials', { public_key: key.line, acl: ['bind:app=ssh'] });
    const port = await tcpEdge({ app: 'ssh' });
    const servicePort = await localService('through openssh');
    const client = spawn(
      'ssh',
      sshTunnelArgs({ port: sshPort, keyPath: key.path, forwardPort: servicePort, label: 'app=ssh' }),
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    sshClients.push(client);
    const listed = await until('the ssh session listed', sessions, (list) =>
      list.some((s) => (s.credential as { id: string }).id === credential.id),
    );
    const session = listed.find((s) => (s.credential as { id: string }).id === credential.id);
    expect(session).toMatchObject({ transport: 'ssh', ip: '127.0.0.1', credential: { id: credential.id } });
    expect(String(session?.agent_version)).toMatch(/^OpenSSH_/);
    expect(
      await until(
        'curl through the ssh tunnel',
        () => curl(port),
        (answer) => answer !== undefined,
      ),
    ).toBe('through openssh');

    // Stopping the session through the API ends the ssh process.
    const exited = once(client, 'exit');
    expect(await api('POST', `/tunnel_sessions/${session?.id}/stop`, {})).toEqual({ status: 204 } as never);
    await exited;
  });

  it('agents reconnect to a new edge after the old one is killed -9', async () => {
    const edgeDir = join(dataDir, 'edge'); // the same tunnel certificate as the first edge
    const startEdge = (tunnelAddr: string) => {
      const edge = spawnCli(
        [
          'edge',
          '--api-url',
          apiUrl,
          '--data-dir',
          edgeDir,
          '--tunnel-addr',
          tunnelAddr,
          '--ssh-addr',
          'off',
          '--tls-addr',
          'off',
          '--metrics-addr',
          '127.0.0.1:0',
          '--tcp-host',
          '127.0.0.1',
          '--tcp-port-range',
          '1-9',
        ],
        { EDGEWARD_EDGE_KEY: edgeKey },
      );
      processes.push(edge);
      return edge;
    };
    const edge = startEdge('127.0.0.1:0');
    const ready = await edge.logLine((line) => line.msg === 'edgeward edge ready');
    const port = Number(ready.tunnelPort);
    const credential = await api('POST', '/credentials', {});
    const agent = startAgent(
      String(credential.token),
      'app=moving',
      await localService('moving'),
      `127.0.0.1:${port}`,
    );
    const before = await agent.logLine((line) => line.msg === 'session opened');
    await until('listed', sessions, (list) => list.some((s) => s.id === before.sessionId));

    await edge.kill('SIGKILL');
    // A new edge on the same address: the agent's backoff brings it back under a new session id.
    const replacement = startEdge(`127.0.0.1:${port}`);
    await replacement.logLine((line) => line.msg === 'edgeward edge ready');
    const after = await agent.logLine(
      (line) => line.msg === 'session opened' && line.sessionId !== before.sessionId,
      30_000,
    );
    const list = await until(
      'the new session listed, the old one gone',
      sessions,
      (current) =>
        current.some((s) => s.id === after.sessionId) && !current.some((s) => s.id === before.sessionId),
      { timeoutMs: 20_000 },
    );
    expect(list.some((s) => s.id === before.sessionId)).toBe(false);
    expect(readFileSync(join(edgeDir, 'tunnel.crt'), 'utf8')).toContain('BEGIN CERTIFICATE');
  }, 90_000);
});
