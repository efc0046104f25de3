import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetch } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../src/dev-cluster/free-port.js';
import { adminApi, sshTunnelArgs } from '../support/admin-api.js';
import { type CliProcess, spawnCli } from '../support/cli-process.js';
import { waitFor } from '../support/eventually.js';
import { HAPROXY, type Haproxy, startHaproxy } from '../support/haproxy.js';
import { curlHttps } from '../support/https-curl.js';
import { OpenSshWorkspace } from '../support/openssh.js';
import { describeUnless } from '../support/skip-reason.js';

/**
 * Several edges behind one address, as a production layout runs them: `edgeward server` (SQLite),
 * three `edgeward edge` processes, HAProxy (Debian's) in front of their tunnel, TLS and SSH ports,
 * our agent as processes holding a session on every edge, the unmodified OpenSSH client holding
 * one session on one edge, and curl as the public client. Faults are real: SIGKILL of an edge, and
 * a rolling restart (SIGTERM, drain, a new process) of every edge while requests flow.
 */
const ADMIN_KEY = 'ewk_high_availability_admin_key_0123456789';
const HOST = 'ha.example.test';
const EDGES = 3;

interface EdgePorts {
  name: string;
  tunnel: number;
  tls: number;
  ssh: number;
  relay: number;
  metrics: number;
}

interface RunningEdge {
  ports: EdgePorts;
  process: CliProcess;
}

const haproxyMissing = existsSync(HAPROXY)
  ? undefined
  : `${HAPROXY} is not installed (Debian's haproxy package)`;

let dataDir: string;
let apiUrl: string;
let edgeKey: string;
let server: CliProcess;
let haproxy: Haproxy | undefined;
let ssh: OpenSshWorkspace;
const lb = { tunnel: 0, tls: 0, ssh: 0 };
const edges: RunningEdge[] = [];
const processes: CliProcess[] = [];
const services: HttpServer[] = [];
const sshClients: ChildProcess[] = [];

const api = adminApi(() => apiUrl, ADMIN_KEY);

async function localService(name: string): Promise<number> {
  const service = createHttpServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end(name);
  });
  service.listen(0, '127.0.0.1');
  await once(service, 'listening');
  services.push(service);
  return (service.address() as AddressInfo).port;
}

function startEdge(ports: EdgePorts): RunningEdge {
  const edgeDir = join(dataDir, 'edge'); // one tunnel certificate and SSH host key for every edge
  const child = spawnCli(
    [
      'edge',
      '--api-url',
      apiUrl,
      '--data-dir',
      edgeDir,
      '--tunnel-addr',
      `127.0.0.1:${ports.tunnel}`,
      '--tls-addr',
      `127.0.0.1:${ports.tls}`,
      '--ssh-addr',
      `127.0.0.1:${ports.ssh}`,
      '--relay-addr',
      `127.0.0.1:${ports.relay}`,
      '--metrics-addr',
      `127.0.0.1:${ports.metrics}`,
      '--tcp-host',
      '127.0.0.1',
      '--tcp-port-range',
      '1-9',
      // HAProxy checks /readyz every 300 ms: two seconds of failing readiness take the edge out of
      // rotation first, even on a loaded machine.
      '--drain-delay',
      '2',
      '--drain-timeout',
      '5',
    ],
    { EDGEWARD_EDGE_KEY: edgeKey },
  );
  processes.push(child);
  const running = { ports, process: child };
  return running;
}

async function edgePorts(name: string): Promise<EdgePorts> {
  return {
    name,
    tunnel: await freePort(),
    tls: await freePort(),
    ssh: await freePort(),
    relay: await freePort(),
    metrics: await freePort(),
  };
}

/** One request as a new client makes it: a new connection through the load balancer. */
async function request(): Promise<{ ok: boolean; body: string; detail: string }> {
  const result = await curlHttps(HOST, lb.tls, '/', ['--max-time', '5']);
  return {
    ok: result.code === 0 && result.status === 200,
    body: result.body,
    detail: `curl ${result.code} HTTP ${result.status} ${result.body.slice(0, 80)} ${result.stderr.trim()}`,
  };
}

/** Requests in `parallel` loops until `stop` resolves; each outcome with when it started. */
async function load(
  parallel: number,
  stop: Promise<unknown>,
): Promise<Array<{ startedAt: number; endedAt: number; ok: boolean; detail: string }>> {
  let stopped = false;
  void stop.then(() => {
    stopped = true;
  });
  const outcomes: Array<{ startedAt: number; endedAt: number; ok: boolean; detail: string }> = [];
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (!stopped) {
        const startedAt = Date.now();
        const outcome = await request();
        outcomes.push({ startedAt, endedAt: Date.now(), ok: outcome.ok, detail: outcome.detail });
      }
    }),
  );
  return outcomes;
}

async function metric(edge: RunningEdge, series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${edge.ports.metrics}/metrics`)).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return Number(line?.slice(series.length + 1) ?? 0);
}

async function sessionsOnEdge(edge: RunningEdge): Promise<number> {
  return metric(edge, 'edgeward_edge_tunnel_sessions{transport="svc/2"}');
}

async function sessionsOf(credentialId: string): Promise<Array<Record<string, unknown>>> {
  const listed = (await api('GET', '/tunnel_sessions')).tunnel_sessions as Array<Record<string, unknown>>;
  return listed.filter((session) => (session.credential as { id: string }).id === credentialId);
}

async function until<T>(
  what: string,
  probe: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 20_000,
) {
  let last: T | undefined;
  const { value } = await waitFor(
    async () => {
      last = await probe();
      return ok(last) && { value: last };
    },
    { what, timeoutMs, intervalMs: 200, detail: () => `last: ${JSON.stringify(last)}` },
  );
  return value;
}

describeUnless(haproxyMissing, 'several edges behind HAProxy', () => {
  let agentCredential: Record<string, unknown>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'edgeward-ha-'));
    ssh = new OpenSshWorkspace();
    server = spawnCli(['server', '--data-dir', dataDir, '--port', '0'], {
      EDGEWARD_ADMIN_API_KEY: ADMIN_KEY,
    });
    processes.push(server);
    apiUrl = String((await server.logLine((line) => line.msg === 'edgeward server ready')).listen);
    const printed = spawnCli(['server', '--data-dir', dataDir, '--print-edge-key']);
    await once(printed.child, 'exit');
    edgeKey = printed.output().trim();

    // The first edge generates the shared certificate and host key; the others start once it has.
    const all = await Promise.all(Array.from({ length: EDGES }, (_, index) => edgePorts(`edge${index + 1}`)));
    const first = startEdge(all[0] as EdgePorts);
    await first.process.logLine((line) => line.msg === 'edgeward edge ready', 60_000);
    edges.push(first);
    for (const ports of all.slice(1)) edges.push(startEdge(ports));
    await Promise.all(
      edges.map((edge) => edge.process.logLine((line) => line.msg === 'edgeward edge ready', 60_000)),
    );

    lb.tunnel = await freePort();
    lb.tls = await freePort();
    lb.ssh = await freePort();
    const servers = (port: keyof Omit<EdgePorts, 'name' | 'metrics'>) =>
      all.map((ports) => ({ name: ports.name, port: ports[port], readyPort: ports.metrics }));
    haproxy = await startHaproxy([
      { name: 'tunnel', port: lb.tunnel, servers: servers('tunnel') },
      { name: 'https', port: lb.tls, servers: servers('tls') },
      { name: 'ssh', port: lb.ssh, servers: servers('ssh') },
    ]);

    agentCredential = await api('POST', '/credentials', { acl: ['bind:app=*'] });
    const backend = await api('POST', '/backends/tunnel_group', { labels: { app: 'web' } });
    const httpsEdge = await api('POST', '/edges/https', { hostports: [`${HOST}:443`] });
    await api('POST', `/edges/https/${httpsEdge.id}/routes`, {
      match_type: 'path_prefix',
      match: '/',
      backend: { backend_id: backend.id },
    });
    for (const name of ['one', 'two']) {
      const agent = spawnCli(
        [
          'agent',
          '--edge-addr',
          `127.0.0.1:${lb.tunnel}`,
          '--edge-ca',
          join(dataDir, 'edge', 'tunnel.crt'),
          '--server-name',
          'localhost',
          '--label',
          'app=web',
          '--forward',
          `http://127.0.0.1:${await localService(name)}`,
          '--no-exec-restart',
        ],
        { EDGEWARD_AUTHTOKEN: String(agentCredential.token) },
      );
      processes.push(agent);
    }
  }, 120_000);

  afterAll(async () => {
    for (const client of sshClients) client.kill('SIGKILL');
    for (const child of processes.reverse()) await child.kill('SIGKILL');
    await haproxy?.stop();
    for (const service of services) service.close();
    ssh?.remove();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('each agent holds a session on every edge, and every edge serves the group', async () => {
    const sessions = await until(
      'two agents with a session on each of the three edges',
      () => sessionsOf(String(agentCredential.id)),
      (list) => list.length === 2 * EDGES,
      30_000,
    );
    expect(new Set(sessions.map((session) => session.id)).size).toBe(2 * EDGES);
    // One session of each agent on each edge, as each edge counts its own.
    for (const edge of edges) expect(await sessionsOnEdge(edge)).toBe(2);
    for (let attempt = 0; attempt < 12; attempt++) {
      const outcome = await request();
      expect(outcome.ok, outcome.detail).toBe(true);
      expect(['one', 'two']).toContain(outcome.body);
    }
    // Every edge served them from its own sessions: none needed the relay.
    for (const edge of edges)
      expect(await metric(edge, 'edgeward_edge_relayed_connections_total{outcome="carried"}')).toBe(0);
  }, 60_000);

  it('a session only one edge holds (OpenSSH) is reached through every edge', async () => {
    const key = ssh.keygen('ed25519');
    const credential = await api('POST', '/ssh_credentials', { public_key: key.line, acl: ['bind:app=ssh'] });
    const backend = await api('POST', '/backends/tunnel_group', { labels: { app: 'ssh' } });
    const host = `ssh.${HOST}`;
    const httpsEdge = await api('POST', '/edges/https', { hostports: [`${host}:443`] });
    await api('POST', `/edges/https/${httpsEdge.id}/routes`, {
      match_type: 'path_prefix',
      match: '/',
      backend: { backend_id: backend.id },
    });
    const servicePort = await localService('through openssh');
    const client = spawn(
      'ssh',
      sshTunnelArgs({ port: lb.ssh, keyPath: key.path, forwardPort: servicePort, label: 'app=ssh' }),
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    sshClients.push(client);
    await until(
      'the OpenSSH session listed',
      () => sessionsOf(String(credential.id)),
      (list) => list.length === 1,
    );
    // Round robin over three edges: nine new connections reach each edge three times; two of the
    // three hold no session of the group and pass the connection to the one that does.
    for (let attempt = 0; attempt < 3 * EDGES; attempt++) {
      const result = await until(
        'a request through the relay',
        () => curlHttps(host, lb.tls, '/', ['--max-time', '5']),
        (answer) => answer.status !== 0,
      );
      expect(result.status, result.body).toBe(200);
      expect(result.body).toBe('through openssh');
    }
    const relayed = await Promise.all(
      edges.map((edge) => metric(edge, 'edgeward_edge_relayed_connections_total{outcome="carried"}')),
    );
    // The edge holding the SSH session carried what the two others passed it (each relayed stream
    // is an upstream connection kept alive for the next request, so one each may be all it took).
    expect(relayed.filter((count) => count > 0)).toHaveLength(1);
    expect(relayed.reduce((sum, count) => sum + count, 0)).toBeGreaterThanOrEqual(EDGES - 1);
  }, 60_000);

  it('SIGKILL of one edge: only requests in flight on it fail, and none from 2 s after', async () => {
    const victim = edges[1] as RunningEdge;
    let killedAt = 0;
    const stop = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      killedAt = Date.now();
      await victim.process.kill('SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 4000));
    })();
    const outcomes = await load(3, stop);
    const failedLate = outcomes.filter((outcome) => !outcome.ok && outcome.startedAt >= killedAt + 2000);
    // Failures allowed: requests in flight at the kill (started before it, ended after it).
    const failedBefore = outcomes.filter((outcome) => !outcome.ok && outcome.endedAt < killedAt);
    console.info(
      `[ha] SIGKILL of one edge: ${outcomes.length} requests, ${outcomes.filter((o) => !o.ok).length} failed (${failedLate.length} started 2 s or more after the kill)`,
    );
    expect(failedBefore.map((outcome) => outcome.detail)).toEqual([]);
    expect(failedLate.map((outcome) => outcome.detail)).toEqual([]);
    // A new edge in its place: agents find it without a restart.
    const replacement = startEdge(victim.ports);
    edges[1] = replacement;
    await replacement.process.logLine((line) => line.msg === 'edgeward edge ready', 60_000);
    await until(
      'the agents back on three edges',
      () => sessionsOf(String(agentCredential.id)),
      (list) => list.length === 2 * EDGES,
      30_000,
    );
  }, 90_000);

  it('a rolling restart of every edge under load fails no request', async () => {
    const stop = (async () => {
      for (let index = 0; index < edges.length; index++) {
        const old = edges[index] as RunningEdge;
        const stoppedAt = Date.now();
        await old.process.kill('SIGTERM');
        console.info(`[ha] ${old.ports.name} drained and exited in ${Date.now() - stoppedAt} ms`);
        if (process.env.EDGEWARD_HA_LOGS)
          (await import('node:fs')).appendFileSync(process.env.EDGEWARD_HA_LOGS, old.process.output());
        const replacement = startEdge(old.ports);
        edges[index] = replacement;
        await replacement.process.logLine((line) => line.msg === 'edgeward edge ready', 60_000);
        // The agents hold a session on the new edge before the next one goes.
        await until(
          'the agents back on every edge',
          () => sessionsOf(String(agentCredential.id)),
          (list) => list.length === 2 * EDGES,
          30_000,
        );
      }
    })();
    const outcomes = await load(3, stop);
    const failed = outcomes.filter((outcome) => !outcome.ok);
    console.info(
      `[ha] rolling restart of ${EDGES} edges: ${outcomes.length} requests, ${failed.length} failed`,
    );
    expect(outcomes.length).toBeGreaterThan(30);
    expect(failed.map((outcome) => outcome.detail)).toEqual([]);
  }, 240_000);
});
