import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { request } from 'undici';
import { Agent } from '../agent/agent.js';
import { parseForwardTarget } from '../agent/forward-target.js';
import { EdgewardClient } from '../client/index.js';
import { newSecretToken } from '../crypto/tokens.js';
import { startServer } from '../server/start.js';
import { API_KEY_PREFIX } from '../server/store/bootstrap.js';
import { demoKubernetes } from './demo-kubernetes.js';
import { getThroughHttpsEdge } from './demo-requests.js';
import { startEdgeFromFlags } from './edge-runtime.js';

const KEY_FILE = 'demo-admin-api-key';
const DEMO_LABELS = { app: 'demo', env: 'local' };

/** The demo keeps its admin key beside its data so a second run can still call the server. */
function demoAdminKey(dataDir: string): string {
  const file = join(dataDir, KEY_FILE);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = newSecretToken(API_KEY_PREFIX);
  writeFileSync(file, key, { mode: 0o600 });
  return key;
}

/** GET through the edge until it answers (the edge opens the port within a moment of the API write). */
async function getThroughEdge(url: string, timeoutMs = 10_000): Promise<string> {
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
}

/**
 * `edgeward demo`: the quick start. Starts the server with an edge on embedded defaults (SQLite in
 * ./.edgeward-demo, everything on 127.0.0.1), a small local service, and an agent for it; creates
 * a TCP edge and an HTTPS edge with a route through the API and sends a request through each edge
 * to the service. Then the same from Kubernetes (demo-kubernetes.ts; `--no-cluster` skips it): a
 * dev control plane, the CRDs, the operator and `config/samples/https-edge.yaml`, until a request
 * goes through the edge the samples describe.
 */
export async function demoCommand(argv: string[]): Promise<number | undefined> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string', default: '.edgeward-demo' },
      port: { type: 'string', default: '4040' },
      exit: { type: 'boolean', default: false },
      'no-cluster': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const dataDir = resolve(values['data-dir']);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const adminKey = demoAdminKey(dataDir);
  const say = (line = '') => process.stdout.write(`${line}\n`);
  const server = await startServer({
    dataDir,
    host: '127.0.0.1',
    port: Number(values.port),
    adminApiKey: adminKey,
    logger: false,
  });
  const baseUrl = server.listenUrl;
  const edge = await startEdgeFromFlags(
    {
      'edge-tunnel-addr': '127.0.0.1:0',
      'edge-tls-addr': '127.0.0.1:0',
      'edge-ssh-addr': '127.0.0.1:0',
      'edge-tcp-host': '127.0.0.1',
      'edge-metrics-addr': 'off',
      'edge-tunnel-name': ['localhost', '127.0.0.1'],
    },
    'edge-',
    {
      apiUrl: baseUrl,
      edgeKey: server.edgeKey,
      dataDir: join(dataDir, 'edge'),
      logger: pino({ level: 'silent' }),
    },
  );
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
    await edge.stop();
    await server.app.close();
  };
  try {
    say(`edgeward server    ${baseUrl} (data: ${dataDir})`);
    say(
      `edgeward edge      tunnel 127.0.0.1:${edge.edge.tunnelPort}, TLS 127.0.0.1:${edge.edge.tlsPort}, SSH 127.0.0.1:${edge.edge.sshPort}`,
    );
    say(`local service      http://127.0.0.1:${servicePort}`);
    say();
    const credential = await client.credentials.create({
      description: 'demo agent',
      acl: Object.entries(DEMO_LABELS).map(([key, value]) => `bind:${key}=${value}`),
    });
    say(
      `tunnel credential  ${credential.id} (acl ${credential.acl.join(' ')}); its token is printed below, the only time it is shown`,
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
    agent = new Agent({
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
    const httpsUrl = `https://${host}:${tlsPort}/through/https`;
    say(`GET ${httpsUrl}`);
    const answer = await getThroughHttpsEdge(host, tlsPort, '/through/https');
    say(
      `  → HTTP ${answer.status}, x-served-by: ${String(answer.headers['x-served-by'])}: ${answer.body.trim()}`,
    );
    say();
    say('Try it yourself:');
    say(`  curl ${url}`);
    say(`  curl -k --resolve ${host}:${tlsPort}:127.0.0.1 ${httpsUrl}`);
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
    if (!values['no-cluster']) {
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
      );
    }
  } catch (error) {
    await stopAll();
    throw error;
  } finally {
    await client.close();
  }
  if (values.exit) {
    await stopAll();
    return 0;
  }
  say();
  say('Everything keeps running; press Ctrl-C to stop. Data stays in the data directory.');
  const stop = () => {
    stopAll().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return undefined;
}
