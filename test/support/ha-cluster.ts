import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server as HttpServer } from 'node:http';
import {
  type AddressInfo,
  createConnection,
  createServer as createTcpServer,
  type Server as TcpServer,
} from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetch } from 'undici';
import { freePort } from '../../src/dev-cluster/free-port.js';
import { adminApi } from './admin-api.js';
import { agentArgs, type CliProcess, spawnCli } from './cli-process.js';
import { type Haproxy, startHaproxy } from './haproxy.js';
import { curlHttps } from './https-curl.js';
import { namedService } from './loopback-server.js';

/** The ports of one edge process; a replacement takes the same ones. */
export interface EdgePorts {
  name: string;
  /** The loopback address its TCP edges listen on: one per edge, so all can hold the same port. */
  tcpHost: string;
  tunnel: number;
  tls: number;
  ssh: number;
  relay: number;
  metrics: number;
}

export interface RunningEdge {
  ports: EdgePorts;
  process: CliProcess;
}

export interface RequestOutcome {
  startedAt: number;
  endedAt: number;
  ok: boolean;
  detail: string;
}

export interface HaClusterOptions {
  edges: number;
  adminKey: string;
  /** Seconds of failing readiness before an edge stops accepting (`--drain-delay`). */
  drainDelaySeconds: number;
  drainTimeoutSeconds: number;
  /** Two server replicas on this PostgreSQL database (edges name both); without it one server on SQLite. */
  databaseUrl?: string;
  /** More arguments for every edge (its own key material, say). */
  edgeArgs?: string[];
  /** The tunnel CA agents trust; default the certificate the first edge generates. */
  edgeCa?: string;
}

/**
 * The production layout on one machine, as real processes: `edgeward server` (one on SQLite, or two
 * replicas on PostgreSQL), N `edgeward edge` processes sharing one tunnel certificate and SSH host
 * key, and HAProxy (Debian's) in front of their tunnel, TLS and SSH ports with `/readyz` checks.
 * Used by `test/edge/high-availability.test.ts` and `bench/ha.mjs`.
 */
export class HaCluster {
  readonly edges: RunningEdge[] = [];
  readonly servers: Array<{ process: CliProcess; url: string }> = [];
  readonly lb = { tunnel: 0, tls: 0, ssh: 0, tcp: 0 };
  /** The one port of reserved addresses (`--tcp-port-range P-P`), served by every edge. */
  tcpPort = 0;
  readonly api: ReturnType<typeof adminApi>;
  readonly dataDir = mkdtempSync(join(tmpdir(), 'edgeward-ha-'));
  edgeKey = '';
  readonly #processes: CliProcess[] = [];
  readonly #httpServices: HttpServer[] = [];
  readonly #tcpServices: TcpServer[] = [];
  #haproxy: Haproxy | undefined;

  private constructor(readonly options: HaClusterOptions) {
    this.api = adminApi(() => this.apiUrl, options.adminKey);
  }

  /** A live server replica's URL (the first that is not stopped). */
  get apiUrl(): string {
    const live = this.servers.find(
      (server) => server.process.child.exitCode === null && !server.process.child.killed,
    );
    return (live ?? this.servers[0])?.url ?? '';
  }

  static async start(options: HaClusterOptions): Promise<HaCluster> {
    const cluster = new HaCluster(options);
    try {
      await cluster.#start();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  async #start(): Promise<void> {
    const { databaseUrl, adminKey } = this.options;
    const env: Record<string, string> = { EDGEWARD_ADMIN_API_KEY: adminKey };
    if (databaseUrl) env.EDGEWARD_SECRET_KEY = randomBytes(32).toString('base64');
    const replicas = databaseUrl ? ['a', 'b'] : ['a'];
    this.tcpPort = await freePort();
    for (const name of replicas) {
      const args = ['server', '--data-dir', join(this.dataDir, name), '--port', '0'];
      args.push('--tcp-port-range', `${this.tcpPort}-${this.tcpPort}`);
      if (databaseUrl) args.push('--database-url', databaseUrl);
      const server = this.#spawn(args, env);
      const ready = await server.logLine((line) => line.msg === 'edgeward server ready', 60_000);
      this.servers.push({ process: server, url: String(ready.listen) });
    }
    const keyArgs = databaseUrl
      ? ['server', '--database-url', databaseUrl, '--print-edge-key']
      : ['server', '--data-dir', join(this.dataDir, 'a'), '--print-edge-key'];
    const printed = spawnCli(keyArgs, env);
    await once(printed.child, 'exit');
    this.edgeKey = printed.output().trim();

    // The first edge generates the shared certificate and host key; the others start once it has.
    const all: EdgePorts[] = [];
    for (let index = 0; index < this.options.edges; index++) all.push(await edgePorts(index + 1));
    const first = this.startEdge(all[0] as EdgePorts);
    await first.process.logLine((line) => line.msg === 'edgeward edge ready', 60_000);
    this.edges.push(first);
    for (const ports of all.slice(1)) this.edges.push(this.startEdge(ports));
    await Promise.all(
      this.edges.map((edge) => edge.process.logLine((line) => line.msg === 'edgeward edge ready', 60_000)),
    );

    this.lb.tunnel = await freePort();
    this.lb.tls = await freePort();
    this.lb.ssh = await freePort();
    this.lb.tcp = await freePort();
    const servers = (port: 'tunnel' | 'tls' | 'ssh') =>
      all.map((ports) => ({ name: ports.name, port: ports[port], readyPort: ports.metrics }));
    this.#haproxy = await startHaproxy([
      { name: 'tunnel', port: this.lb.tunnel, servers: servers('tunnel') },
      { name: 'https', port: this.lb.tls, servers: servers('tls') },
      { name: 'ssh', port: this.lb.ssh, servers: servers('ssh') },
      {
        name: 'tcp',
        port: this.lb.tcp,
        servers: all.map((ports) => ({
          name: ports.name,
          host: ports.tcpHost,
          port: this.tcpPort,
          readyPort: ports.metrics,
        })),
      },
    ]);
  }

  #spawn(args: string[], env: Record<string, string>): CliProcess {
    const child = spawnCli(args, env);
    this.#processes.push(child);
    return child;
  }

  /** An edge process on `ports`, fed by every server replica. */
  startEdge(ports: EdgePorts): RunningEdge {
    const child = this.#spawn(
      [
        'edge',
        '--api-url',
        this.servers.map((server) => server.url).join(','),
        '--data-dir',
        join(this.dataDir, 'edge'), // one tunnel certificate and SSH host key for every edge
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
        ports.tcpHost,
        '--tcp-port-range',
        `${this.tcpPort}-${this.tcpPort}`,
        '--drain-delay',
        String(this.options.drainDelaySeconds),
        '--drain-timeout',
        String(this.options.drainTimeoutSeconds),
        ...(this.options.edgeArgs ?? []),
      ],
      { EDGEWARD_EDGE_KEY: this.edgeKey },
    );
    return { ports, process: child };
  }

  /**
   * Replaces edge `index`: SIGTERM (it drains) or SIGKILL, then a new process on the same ports;
   * resolves once the new one is ready, with how long the old one took to exit and whether its
   * drain ended with nothing in flight (rather than at `--drain-timeout`).
   */
  async replaceEdge(
    index: number,
    signal: 'SIGTERM' | 'SIGKILL',
  ): Promise<{ stoppedInMs: number; drainedInTime: boolean }> {
    const old = this.edges[index];
    if (!old) throw new Error(`no edge ${index}`);
    const stoppingAt = Date.now();
    await old.process.kill(signal);
    const stoppedInMs = Date.now() - stoppingAt;
    // A drain that ended with nothing in flight says so; one cut at --drain-timeout says that.
    const drainedInTime = old.process.output().includes('"msg":"drained: nothing in flight"');
    const replacement = this.startEdge(old.ports);
    this.edges[index] = replacement;
    await replacement.process.logLine((line) => line.msg === 'edgeward edge ready', 60_000);
    return { stoppedInMs, drainedInTime };
  }

  /** A local HTTP service answering `name`; its port. */
  service(name: string): Promise<number> {
    return namedService(name, this.#httpServices);
  }

  /** A local TCP service echoing what it reads; its port. */
  async echoService(): Promise<number> {
    const service = createTcpServer((socket) => socket.pipe(socket));
    service.listen(0, '127.0.0.1');
    await once(service, 'listening');
    this.#tcpServices.push(service);
    return (service.address() as AddressInfo).port;
  }

  /** A TCP edge on the reserved address (every edge's `tcpHost`, port `tcpPort`) to the group `labels`. */
  async tcpEdge(labels: Record<string, string>): Promise<void> {
    const backend = await this.api('POST', '/backends/tunnel_group', { labels });
    const reserved = await this.api('POST', '/reserved_addrs', {});
    await this.api('POST', '/edges/tcp', { hostports: [reserved.addr], backend: { backend_id: backend.id } });
  }

  /** An HTTPS edge for `host` whose one route carries to the tunnel group `labels`. */
  async httpsEdge(host: string, labels: Record<string, string>): Promise<void> {
    const backend = await this.api('POST', '/backends/tunnel_group', { labels });
    const edge = await this.api('POST', '/edges/https', { hostports: [`${host}:443`] });
    await this.api('POST', `/edges/https/${edge.id}/routes`, {
      match_type: 'path_prefix',
      match: '/',
      backend: { backend_id: backend.id },
    });
  }

  /** `edgeward agent` dialing the load balancer's tunnel port, carrying to `forward` (a URL). */
  startAgent(token: string, label: string, forward: string): CliProcess {
    return this.#spawn(
      agentArgs({
        edgeAddr: `127.0.0.1:${this.lb.tunnel}`,
        edgeCa: this.options.edgeCa ?? join(this.dataDir, 'edge', 'tunnel.crt'),
        label,
        forward,
        extra: ['--no-exec-restart'],
      }),
      { EDGEWARD_AUTHTOKEN: token },
    );
  }

  /**
   * One long TCP stream through the load balancer's TCP port to an echo service: a 1 KiB chunk
   * every 50 ms for `durationMs`, then a half-close; ok when every byte came back in order.
   */
  stream(durationMs: number): Promise<{ ok: boolean; detail: string }> {
    return new Promise((resolve) => {
      const chunk = randomBytes(1024);
      const socket = createConnection({ host: '127.0.0.1', port: this.lb.tcp });
      const chunks = Math.max(1, Math.round(durationMs / 50));
      let sent = 0;
      let received = 0;
      let settled = false;
      const settle = (ok: boolean, detail: string) => {
        if (settled) return;
        settled = true;
        clearInterval(writer);
        clearTimeout(deadline);
        socket.destroy();
        resolve({ ok, detail });
      };
      const writer = setInterval(() => {
        if (sent === chunks) return;
        socket.write(chunk);
        if (++sent === chunks) socket.end();
      }, 50);
      const deadline = setTimeout(
        () =>
          settle(false, `stream: ${received} of ${chunks * 1024} bytes back after ${durationMs + 5000} ms`),
        durationMs + 5000,
      );
      socket.on('data', (data: Buffer) => {
        for (const byte of data) {
          if (byte !== chunk[received % 1024]) return settle(false, `stream: byte ${received} differs`);
          received++;
        }
      });
      socket.on('end', () =>
        settle(received === chunks * 1024, `stream: ended with ${received} of ${chunks * 1024} bytes back`),
      );
      socket.on('error', (error) => settle(false, `stream: ${error.message} after ${received} bytes back`));
    });
  }

  /** One request as a new client makes it: a new connection through the load balancer. */
  async request(host: string): Promise<{ ok: boolean; body: string; detail: string }> {
    const result = await curlHttps(host, this.lb.tls, '/', ['--max-time', '5']);
    return {
      ok: result.code === 0 && result.status === 200,
      body: result.body,
      detail: `curl ${result.code} HTTP ${result.status} ${result.body.slice(0, 80)} ${result.stderr.trim()}`,
    };
  }

  /** Requests to `host` in `parallel` loops until `stop` settles. */
  load(host: string, parallel: number, stop: Promise<unknown>): Promise<RequestOutcome[]> {
    return this.loop(parallel, stop, () => this.request(host));
  }

  /** `attempt` in `parallel` loops, one at a time each, until `stop` settles; every outcome. */
  async loop(
    parallel: number,
    stop: Promise<unknown>,
    attempt: () => Promise<{ ok: boolean; detail: string }>,
  ): Promise<RequestOutcome[]> {
    let stopped = false;
    void stop.finally(() => {
      stopped = true;
    });
    const outcomes: RequestOutcome[] = [];
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (!stopped) {
          const startedAt = Date.now();
          const outcome = await attempt();
          outcomes.push({ startedAt, endedAt: Date.now(), ok: outcome.ok, detail: outcome.detail });
        }
      }),
    );
    await stop;
    return outcomes;
  }

  /** One series of an edge's `/metrics` (0 when absent). */
  async metric(edge: RunningEdge, series: string): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${edge.ports.metrics}/metrics`)).text();
    const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
    return Number(line?.slice(series.length + 1) ?? 0);
  }

  /** The sessions `GET /tunnel_sessions` lists for a credential. */
  async sessionsOf(credentialId: string): Promise<Array<Record<string, unknown>>> {
    const listed = (await this.api('GET', '/tunnel_sessions')).tunnel_sessions as Array<
      Record<string, unknown>
    >;
    return listed.filter((session) => (session.credential as { id: string }).id === credentialId);
  }

  async stop(): Promise<void> {
    for (const child of [...this.#processes].reverse()) await child.kill('SIGKILL');
    await this.#haproxy?.stop();
    for (const service of [...this.#httpServices, ...this.#tcpServices]) service.close();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

async function edgePorts(number: number): Promise<EdgePorts> {
  return {
    name: `edge${number}`,
    tcpHost: `127.0.0.${10 + number}`,
    tunnel: await freePort(),
    tls: await freePort(),
    ssh: await freePort(),
    relay: await freePort(),
    metrics: await freePort(),
  };
}
