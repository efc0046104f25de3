import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import type { Agent } from '../agent/agent.js';
import { processAlive } from '../lib/process-alive.js';
import { defineCommand, UsageError } from './command.js';

const KEY_FILE = 'demo-admin-api-key';
const PID_FILE = 'demo.pid';
const ACME_ROOT_FILE = 'acme-root.pem';
/**
 * Everything a demo run writes into its data directory. A directory holding anything else was not
 * made by the demo (or holds a user's files since): it is never cleared.
 */
const DEMO_ENTRIES = new Set([
  'edgeward.sqlite',
  'edgeward.sqlite-wal',
  'edgeward.sqlite-shm',
  'secret.key',
  KEY_FILE,
  PID_FILE,
  'edge',
  'cluster',
  'operator.log',
  // The local ACME CA's root, for `curl --cacert` (demo-acme.ts).
  ACME_ROOT_FILE,
]);
const DEMO_LABELS = { app: 'demo', env: 'local' };
const DEMO_TCP_PORTS = { min: 20000, max: 29999 };

/** The process id of a demo still running from `dataDir`, if one is. */
function runningDemo(dataDir: string): number | undefined {
  const pidFile = join(dataDir, PID_FILE);
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  // No such process: the last run ended without removing its pid file.
  if (!processAlive(pid)) return undefined;
  // A pid reused by another program since is not a demo.
  const cmdline = `/proc/${pid}/cmdline`;
  return !existsSync(cmdline) || readFileSync(cmdline, 'utf8').includes('demo') ? pid : undefined;
}

/**
 * Each run starts from a fresh state: what the last run left (its database, its edge's files, a
 * control plane a killed run could not stop) is cleared, so the second run makes the same edges
 * as the first. Only what a demo writes is cleared: a directory holding anything else is refused.
 */
async function freshDataDir(dataDir: string, say: (line: string) => void): Promise<void> {
  if (existsSync(dataDir)) {
    const entries = readdirSync(dataDir);
    const foreign = entries.filter((entry) => !DEMO_ENTRIES.has(entry));
    if (foreign.length > 0) {
      throw new UsageError(
        `--data-dir: ${dataDir} holds files a demo does not make (${foreign.slice(0, 3).join(', ')}); each run clears its data directory, so give a new or empty one`,
      );
    }
    const pid = runningDemo(dataDir);
    if (pid !== undefined) {
      throw new Error(
        `a demo is already running from ${dataDir} (pid ${pid}); stop it with Ctrl-C (or kill ${pid}) first`,
      );
    }
    const cluster = join(dataDir, 'cluster');
    if (existsSync(cluster)) {
      // A demo killed before it could clean up left its control plane running: stop that one.
      const { controlPlaneDown, readControlPlane } = await import('../dev-cluster/control-plane.js');
      if (readControlPlane(cluster)) await controlPlaneDown(cluster);
    }
    if (entries.length > 0) say(`(cleared the previous run's state from ${dataDir})`);
    for (const entry of entries) rmSync(join(dataDir, entry), { recursive: true, force: true });
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dataDir, PID_FILE), `${process.pid}\n`);
}

/**
 * `edgeward demo`: the quick start. Starts the server with an edge on embedded defaults (SQLite in
 * ./.edgeward-demo, everything on 127.0.0.1), a small local service, and an agent for it; creates
 * a TCP edge and an HTTPS edge with a route through the API and sends a request through each edge
 * to the service. Then the same from Kubernetes (demo-kubernetes.ts; `--no-cluster` skips it): a
 * dev control plane, the CRDs, the operator and `config/samples/https-edge.yaml`, until a request
 * goes through the edge the samples describe.
 */
export const demoCommand = defineCommand({
  name: 'demo',
  summary:
    'see it work: a server, an edge, an agent and requests through them, then the same from Kubernetes',
  description: `Starts the server and an edge on embedded defaults (everything on 127.0.0.1), a small local
HTTP service and an agent for it; through the API creates a TCP edge and an HTTPS edge with a
route, and sends a request through each. Then the same from Kubernetes objects: a dev control
plane (etcd + kube-apiserver, built from Go modules once and cached), the CRDs, the operator and
config/samples/https-edge.yaml, until a request goes through the edge the samples describe.
Everything keeps running until Ctrl-C, which stops all of it. Each run starts from a fresh state:
it clears what the previous run left in its data directory.`,
  flags: {
    'data-dir': {
      type: 'string',
      value: 'DIR',
      default: '.edgeward-demo',
      help: "the demo's database, admin key, edge files, control plane and logs (cleared each run)",
    },
    port: { type: 'string', value: 'PORT', default: '4040', help: 'the API port (0: any free port)' },
    exit: { type: 'boolean', help: 'stop everything after the checks instead of running until Ctrl-C' },
    'no-cluster': { type: 'boolean', help: 'skip the Kubernetes half' },
  },
  run: async (values) => {
    const port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new UsageError(`--port: '${values.port}' is not a port`);
    return runDemo({
      dataDir: resolve(values['data-dir']),
      port,
      exit: values.exit === true,
      cluster: !values['no-cluster'],
    });
  },
});

async function runDemo(options: {
  dataDir: string;
  port: number;
  exit: boolean;
  cluster: boolean;
}): Promise<number | undefined> {
  const { default: pino } = await import('pino');
  const { request } = await import('undici');
  const agents = await import('../agent/agent.js');
  const { parseForwardTarget } = await import('../agent/forward-target.js');
  const { EdgewardClient } = await import('../client/index.js');
  const { newSecretToken } = await import('../crypto/tokens.js');
  const { startServer } = await import('../server/start.js');
  const { API_KEY_PREFIX } = await import('../server/store/bootstrap.js');
  const { demoKubernetes } = await import('./demo-kubernetes.js');
  const { getThroughHttpsEdge } = await import('./demo-requests.js');
  const { demoAcme } = await import('./demo-acme.js');
  const { startEdgeFromFlags } = await import('./edge-runtime.js');

  /** GET through the edge until it answers (the edge opens the port within a moment of the API write). */
  /** The certificate the server obtained by ACME for `name`, once it is there. */
  const waitForIssuedCertificate = async (name: string, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const page = await client.tlsCertificates.list();
      const issued = page.tls_certificates.find(
        (certificate) =>
          certificate.issued_at !== null && certificate.subject_alternative_names.dns_names.includes(name),
      );
      if (issued) return issued;
      if (Date.now() > deadline)
        throw new Error(`no certificate for ${name} from the ACME CA in ${timeoutMs / 1000} s`);
      await new Promise((done) => setTimeout(done, 200));
    }
  };
  const getThroughEdge = async (url: string, timeoutMs = 10_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const response = await request(url, { headersTimeout: 3000, bodyTimeout: 3000 });
        const text = await response.body.text();
        if (response.statusCode === 200) return text;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`no answer through the edge at ${url}`, { cause: error });
      }
      if (Date.now() > deadline) throw new Error(`no 200 through the edge at ${url}`);
      await new Promise((done) => setTimeout(done, 100));
    }
  };

  const { dataDir } = options;
  const say = (line = '') => process.stdout.write(`${line}\n`);
  await freshDataDir(dataDir, say);
  const adminKey = newSecretToken(API_KEY_PREFIX);
  writeFileSync(join(dataDir, KEY_FILE), adminKey, { mode: 0o600 });
  // Certificates by ACME from a local CA, when one is built here.
  const ca = await demoAcme(join(dataDir, ACME_ROOT_FILE), options.cluster, say);
  const acme = 'reason' in ca ? undefined : ca;
  const server = await startServer({
    dataDir,
    host: '127.0.0.1',
    port: options.port,
    adminApiKey: adminKey,
    logger: false,
    acme: acme?.settings,
    // Below the kernel's ephemeral ports (32768-60999 on Linux): a reserved address's port is never
    // one an outgoing connection of this machine happens to hold.
    tcpPortRange: DEMO_TCP_PORTS,
  }).catch(async (error: unknown) => {
    await acme?.stop();
    // The likeliest first-hour failure: another server or demo already has the port.
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      rmSync(join(dataDir, PID_FILE), { force: true });
      throw new UsageError(
        `--port: ${options.port} is in use (another server or demo?); pass --port N, or 0 for any`,
        {
          cause: error,
        },
      );
    }
    throw error;
  });
  const baseUrl = server.listenUrl;
  // Two edges of one control plane, as production runs them: one certificate and host key (one
  // data directory), a relay each.
  const startDemoEdge = (tcpPortRange: string | undefined, tlsPort = 0) =>
    startEdgeFromFlags(
      {
        'edge-tunnel-addr': '127.0.0.1:0',
        'edge-tls-addr': `127.0.0.1:${tlsPort}`,
        'edge-ssh-addr': '127.0.0.1:0',
        'edge-relay-addr': '127.0.0.1:0',
        'edge-tcp-host': '127.0.0.1',
        'edge-metrics-addr': 'off',
        'edge-tunnel-name': ['localhost', '127.0.0.1'],
        ...(tcpPortRange && { 'tcp-port-range': tcpPortRange }),
      },
      'edge-',
      {
        apiUrl: baseUrl,
        edgeKey: server.edgeKey,
        dataDir: join(dataDir, 'edge'),
        logger: pino({ level: 'silent' }),
      },
    );
  // The first edge listens where the CA validates (any edge would answer: they all get the challenges).
  const edge = await startDemoEdge(undefined, acme?.tlsPort);
  let secondEdge: Awaited<ReturnType<typeof startDemoEdge>> | undefined;
  const service = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const added = req.headers['x-demo'] ? `, x-demo: ${String(req.headers['x-demo'])}` : '';
    res.end(`hello from your local service (it saw ${req.method} ${req.url}${added})\n`);
  });
  service.listen(0, '127.0.0.1');
  await once(service, 'listening');
  const servicePort = (service.address() as AddressInfo).port;
  const client = new EdgewardClient({ baseUrl, apiKey: adminKey });
  const tunnelCa = join(dataDir, 'edge', 'tunnel.crt');
  let agent: Agent | undefined;
  let stopKubernetes = async () => {};
  const stopAll = async () => {
    await stopKubernetes();
    agent?.stop();
    service.close();
    const edgeStarted = Date.now();
    await secondEdge?.stop();
    await edge.stop();
    say(`  stopped the edges and the agent (${((Date.now() - edgeStarted) / 1000).toFixed(1)} s)`);
    await server.app.close();
    say('  stopped the server');
    if (acme) {
      await acme.stop();
      say('  stopped the ACME CA (Pebble)');
    }
    rmSync(join(dataDir, PID_FILE), { force: true });
  };
  try {
    say(`edgeward server    ${baseUrl} (data: ${dataDir})`);
    say(
      `edgeward edge      tunnel 127.0.0.1:${edge.edge.tunnelPort}, TLS 127.0.0.1:${edge.edge.tlsPort}, SSH 127.0.0.1:${edge.edge.sshPort}`,
    );
    say(`local service      http://127.0.0.1:${servicePort}`);
    say(
      acme
        ? `ACME CA            ${acme.settings.directoryUrl} (Pebble, on loopback; its root: ${acme.rootFile})`
        : `ACME CA            none: ${'reason' in ca ? ca.reason : ''}; HTTPS edges serve self-signed certificates`,
    );
    say();
    const credential = await client.credentials.create({
      description: 'demo agent',
      acl: Object.entries(DEMO_LABELS).map(([key, value]) => `bind:${key}=${value}`),
    });
    say(
      `tunnel credential  ${credential.id} (acl ${credential.acl.join(' ')}); ${options.exit ? 'its token is not printed with --exit' : 'its token is printed below, the only time it is shown'}`,
    );
    const backend = await client.tunnelGroupBackends.create({
      description: 'demo group',
      labels: DEMO_LABELS,
    });
    say(`tunnel group       ${backend.id} (labels ${JSON.stringify(backend.labels)})`);
    const addr = await client.reservedAddrs.create({ description: 'demo TCP address', region: 'us' });
    const tcpEdge = await client.tcpEdges.create({
      description: 'demo TCP edge',
      hostports: [addr.addr],
      backend: { backend_id: backend.id },
    });
    const port = Number(addr.addr.slice(addr.addr.lastIndexOf(':') + 1));
    say(`TCP edge           ${tcpEdge.id} on ${addr.addr} (served locally on 127.0.0.1:${port})`);

    // The same agent `edgeward agent` runs, in this process for the demo.
    agent = new agents.Agent({
      edgeAddr: `127.0.0.1:${edge.edge.tunnelPort}`,
      authtoken: credential.token ?? '',
      labels: DEMO_LABELS,
      forward: parseForwardTarget(`http://127.0.0.1:${servicePort}`),
      agentVersion: 'demo',
      ca: readFileSync(tunnelCa),
      serverName: 'localhost',
    });
    const online = once(agent, 'session') as Promise<[string]>;
    agent.start();
    const [sessionId] = await online;
    const session = await client.tunnelSessions.get(sessionId);
    say(`agent online       session ${session.id} (${session.transport} from ${session.ip})`);
    say();
    const url = `http://127.0.0.1:${port}/through/the/edge`;
    say(`GET ${url}`);
    say(`  → ${(await getThroughEdge(url)).trim()}`);
    say();

    // The same group behind an HTTPS edge, a route with modules on.
    const host = 'demo.localhost';
    const httpsEdge = await client.httpsEdges.create({
      description: 'demo HTTPS edge',
      hostports: [`${host}:443`],
    });
    const route = await client.httpsEdgeRoutes.create(httpsEdge.id, {
      description: 'everything to the demo group',
      match_type: 'path_prefix',
      match: '/',
      backend: { backend_id: backend.id },
      response_headers: { add: { 'x-served-by': 'edgeward' } },
      request_headers: { add: { 'x-demo': 'added by the edge' } },
    });
    const tlsPort = edge.edge.tlsPort;
    say(
      `HTTPS edge         ${httpsEdge.id} for ${host}, route ${route.id} (served locally on 127.0.0.1:${tlsPort})`,
    );
    if (acme) {
      const issued = await waitForIssuedCertificate(host);
      say(
        `certificate        ${issued.id} for ${host} from the ACME CA (issued by ${issued.issuer_common_name}, valid until ${issued.not_after}, renewed on its own)`,
      );
    }
    const httpsUrl = `https://${host}:${tlsPort}/through/https`;
    say(`GET ${httpsUrl}${acme ? " (verified against the CA's root)" : ''}`);
    const answer = await getThroughHttpsEdge(host, tlsPort, '/through/https', acme?.rootPem);
    say(
      `  → HTTP ${answer.status}, x-served-by: ${String(answer.headers['x-served-by'])}: ${answer.body.trim()}`,
    );
    say();

    // A second edge: the agent finds it and holds a session on each, so either edge serves the
    // group and losing one loses no traffic. (It serves no reserved TCP port: the first has them.)
    secondEdge = await startDemoEdge('1-1');
    const bothEdgesAt = Date.now();
    while (agent.sessionIds.length < 2 && Date.now() - bothEdgesAt < 15_000)
      await new Promise((resolve) => setTimeout(resolve, 50));
    say(
      `second edge        tunnel 127.0.0.1:${secondEdge.edge.tunnelPort}, TLS 127.0.0.1:${secondEdge.edge.tlsPort}: the agent holds ${agent.sessionIds.length} sessions, one per edge`,
    );
    const secondUrl = `https://${host}:${secondEdge.edge.tlsPort}/through/the/second/edge`;
    say(`GET ${secondUrl}`);
    const secondAnswer = await getThroughHttpsEdge(
      host,
      secondEdge.edge.tlsPort,
      '/through/the/second/edge',
      acme?.rootPem,
    );
    say(`  → HTTP ${secondAnswer.status}: ${secondAnswer.body.trim()}`);
    if (!options.exit) {
      say();
      say('Try it yourself:');
      say(`  curl ${url}`);
      say(
        acme
          ? `  curl --cacert ${acme.rootFile} --resolve ${host}:${tlsPort}:127.0.0.1 ${httpsUrl}`
          : `  curl -k --resolve ${host}:${tlsPort}:127.0.0.1 ${httpsUrl}`,
      );
      say(`  export EDGEWARD_API_KEY=${adminKey}`);
      say(
        `  curl -s ${baseUrl}/tunnel_sessions -H "Authorization: Bearer $EDGEWARD_API_KEY" -H "Svc-Version: 2"`,
      );
      say('  # a second agent of the same group (connections are spread over both):');
      say(
        `  EDGEWARD_AUTHTOKEN=${credential.token} npx edgeward agent --edge-addr 127.0.0.1:${edge.edge.tunnelPort} \\`,
      );
      say(
        `      --edge-ca ${tunnelCa} --server-name localhost --label app=demo --label env=local --forward http://127.0.0.1:${servicePort}`,
      );
      say(`  OpenAPI document: ${baseUrl}/openapi.json, browsable at ${baseUrl}/docs`);
    }
    if (options.cluster) {
      say();
      stopKubernetes = await demoKubernetes(
        {
          baseUrl,
          adminKey,
          tunnelAddr: `127.0.0.1:${edge.edge.tunnelPort}`,
          tunnelCaFile: tunnelCa,
          tlsPort,
        },
        dataDir,
        say,
        { tryItYourself: !options.exit },
      );
    }
  } catch (error) {
    await stopAll();
    throw error;
  } finally {
    await client.close();
  }
  if (options.exit) {
    say();
    say('Stopping (--exit):');
    await stopAll();
    return 0;
  }
  say();
  say(`Everything keeps running; press Ctrl-C to stop it all (the next run starts afresh in ${dataDir}).`);
  const stop = (signal: NodeJS.Signals) => {
    say();
    say(`${signal}: stopping everything the demo started...`);
    stopAll().then(
      () => {
        say('Stopped.');
        process.exit(0);
      },
      (error: unknown) => {
        process.stderr.write(
          `edgeward demo: stopping failed: ${error instanceof Error ? error.message : String(error)}\n`,
        );
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return undefined;
}
