import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type Server as HttpServer,
  type IncomingHttpHeaders,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import type { Agent } from '../../src/agent/agent.js';
import { startTestAgent, startTestEdge, type TestEdge } from '../support/edge.js';
import { eventually } from '../support/eventually.js';
import { type CurlResult, curlHttps } from '../support/https-curl.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * HTTPS edges through the whole data plane: an edge and routes made through the API, served by the
 * edge's SNI listener and HTTPS front, carried by our agent to a local service. The public clients
 * are curl (HTTP/1.1 and HTTP/2) and the `ws` WebSocket client.
 */
const run = promisify(execFile);

let t: TestServer;
let edge: TestEdge;
let service: HttpServer;
let servicePort: number;
let webSockets: WebSocketServer;
const seen: {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  bytes: number;
  /** The service's view of the connection the request came on (the agent's side). */
  connection: string;
}[] = [];
const agents: Agent[] = [];

beforeAll(async () => {
  t = await startTestServer();
  edge = await startTestEdge(t, { tls: true });
  service = createHttpServer((request, response) => {
    let bytes = 0;
    const url = request.url ?? '/';
    if (url.startsWith('/echo')) {
      // Streams the body back as it comes: a request body and a response body in flight at once.
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      request.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        response.write(chunk);
      });
      request.on('end', () => {
        seen.push({
          method: request.method ?? '',
          url,
          headers: request.headers,
          bytes,
          connection: `${request.socket.remotePort}`,
        });
        response.end();
      });
      return;
    }
    request.resume();
    request.on('end', () => {
      seen.push({
        method: request.method ?? '',
        url,
        headers: request.headers,
        bytes,
        connection: `${request.socket.remotePort}`,
      });
      response.writeHead(200, {
        'content-type': 'text/plain',
        connection: 'keep-alive, x-secret-hop',
        'x-secret-hop': 'must not leave the edge',
        'keep-alive': 'timeout=5',
      });
      response.end(`service: ${request.method} ${url}`);
    });
  });
  webSockets = new WebSocketServer({ server: service });
  webSockets.on('connection', (socket, request) =>
    socket.on('message', (data) => socket.send(`echo ${request.url}: ${String(data)}`)),
  );
  service.listen(0, '127.0.0.1');
  await once(service, 'listening');
  servicePort = (service.address() as AddressInfo).port;
});

afterEach(() => {
  for (const agent of agents.splice(0)) agent.stop();
  seen.length = 0;
});

afterAll(async () => {
  await edge?.stop();
  webSockets?.close();
  service?.close();
  await t?.stop();
});

async function create(path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await t.api('POST', path, body);
  expect(response.status, `${path}: ${response.text}`).toBe(201);
  return response.body;
}

/** An HTTPS edge for `host`, a backend with an agent online, and `routes` (match_type, match). */
async function httpsEdge(
  host: string,
  routes: { match_type: string; match: string; modules?: Record<string, unknown>; backend?: boolean }[],
  options: { agent?: boolean } = {},
) {
  const credential = await create('/credentials', {});
  const backend = await create('/backends/tunnel_group', { labels: { https: host } });
  const httpsEdge = await create('/edges/https', { hostports: [`${host}:443`] });
  const created = [];
  for (const route of routes) {
    created.push(
      await create(`/edges/https/${httpsEdge.id}/routes`, {
        match_type: route.match_type,
        match: route.match,
        ...(route.backend !== false && { backend: { backend_id: backend.id } }),
        ...route.modules,
      }),
    );
  }
  if (options.agent !== false) {
    const agent = startTestAgent(edge, {
      authtoken: String(credential.token),
      labels: { https: host },
      forward: `http://127.0.0.1:${servicePort}`,
    });
    agents.push(agent);
    await once(agent, 'session');
  }
  return { edge: httpsEdge, routes: created };
}

const curl = (host: string, path: string, args: string[] = []): Promise<CurlResult> =>
  curlHttps(host, edge.edge.tlsPort, path, args);

describe('HTTPS edges', () => {
  it('serves HTTP/2 and HTTP/1.1 clients through the agent, with X-Forwarded-* and no hop-by-hop headers', async () => {
    await httpsEdge('app.https.test', [{ match_type: 'path_prefix', match: '/' }]);
    const h2 = await eventually(
      () => curl('app.https.test', '/hello?x=1', ['--http2']),
      (result) => result.status === 200,
    );
    expect(h2.headers).toMatch(/^HTTP\/2 200/);
    expect(h2.body).toBe('service: GET /hello?x=1');
    expect(h2.headers).not.toMatch(/x-secret-hop|keep-alive/i);
    const h1 = await curl('app.https.test', '/again', [
      '--http1.1',
      '-H',
      'X-Forwarded-For: 203.0.113.9',
      '-H',
      'Connection: keep-alive, x-client-hop',
      '-H',
      'X-Client-Hop: no',
    ]);
    expect(h1.headers).toMatch(/^HTTP\/1\.1 200/);
    expect(h1.body).toBe('service: GET /again');
    expect(h1.headers).not.toMatch(/x-secret-hop/i);
    const [first, second] = seen;
    expect(first?.headers).toMatchObject({
      host: `app.https.test:${edge.edge.tlsPort}`,
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': `app.https.test:${edge.edge.tlsPort}`,
    });
    // Hop-by-hop: a header the client's Connection names stays at the edge.
    expect(second?.headers['x-client-hop']).toBeUndefined();
    // A client's own X-Forwarded-For is kept, with the address the edge saw appended.
    expect(second?.headers['x-forwarded-for']).toBe('203.0.113.9, 127.0.0.1');
  });

  it('keeps its configuration feed with tls_termination set (stored without terminate_at) and serves the edge', async () => {
    const credential = await create('/credentials', {});
    const backend = await create('/backends/tunnel_group', { labels: { https: 'tls-set.https.test' } });
    const created = await create('/edges/https', {
      hostports: ['tls-set.https.test:443'],
      tls_termination: { min_version: '1.2' },
    });
    await create(`/edges/https/${created.id}/routes`, {
      match_type: 'path_prefix',
      match: '/',
      backend: { backend_id: backend.id },
    });
    const agent = startTestAgent(edge, {
      authtoken: String(credential.token),
      labels: { https: 'tls-set.https.test' },
      forward: `http://127.0.0.1:${servicePort}`,
    });
    agents.push(agent);
    await once(agent, 'session');
    const served = await eventually(
      () => curl('tls-set.https.test', '/set'),
      (result) => result.status === 200,
    );
    expect(served.body).toBe('service: GET /set');
    expect(edge.edge.controlPlaneConnected).toBe(true);
  });

  it('picks the route: exact path, then the longest prefix, then one naming the host', async () => {
    const { routes } = await httpsEdge('routes.https.test', [
      { match_type: 'path_prefix', match: '/' },
      {
        match_type: 'path_prefix',
        match: '/api',
        modules: { response_headers: { add: { 'x-route': 'api' } } },
      },
      {
        match_type: 'path_prefix',
        match: '/api/v2',
        modules: { response_headers: { add: { 'x-route': 'v2' } } },
      },
      {
        match_type: 'exact_path',
        match: '/api/v2/health',
        modules: { response_headers: { add: { 'x-route': 'health' } } },
      },
      {
        match_type: 'path_prefix',
        match: 'routes.https.test/api/v2/health',
        modules: { response_headers: { add: { 'x-route': 'host-prefix' } } },
      },
    ]);
    expect(routes).toHaveLength(5);
    const routeOf = async (path: string) => {
      const result = await eventually(
        () => curl('routes.https.test', path),
        (r) => r.status === 200,
      );
      return /x-route: (\S+)/i.exec(result.headers)?.[1] ?? 'root';
    };
    expect(await routeOf('/')).toBe('root');
    expect(await routeOf('/api')).toBe('api');
    expect(await routeOf('/api/users')).toBe('api');
    expect(await routeOf('/api/v2/users')).toBe('v2');
    expect(await routeOf('/api/v2/health')).toBe('health');
    expect(await routeOf('/api/v2/health/deep')).toBe('host-prefix');
  });

  it('answers 404 naming the edge when no route matches, and 502 when no agent is online', async () => {
    const { edge: created } = await httpsEdge(
      'pages.https.test',
      [{ match_type: 'exact_path', match: '/only' }],
      { agent: false },
    );
    const missing = await eventually(
      () => curl('pages.https.test', '/other'),
      (r) => r.status === 404,
    );
    expect(missing.status).toBe(404);
    expect(missing.headers).toMatch(/edgeward-error: no-route/i);
    expect(missing.body).toContain(String(created.id));
    expect(missing.body).toContain('/other');
    const offline = await curl('pages.https.test', '/only');
    expect(offline.status).toBe(502);
    expect(offline.headers).toMatch(/edgeward-error: no-session/i);
    expect(offline.body).toContain(String(created.id));
    expect(seen).toHaveLength(0);
  });

  it('answers 421 to a request for another edge on a connection opened for this one', async () => {
    await httpsEdge('first.https.test', [{ match_type: 'path_prefix', match: '/' }]);
    await httpsEdge('second.https.test', [{ match_type: 'path_prefix', match: '/' }]);
    await eventually(
      () => curl('first.https.test', '/'),
      (r) => r.status === 200,
    );
    const fronted = await curl('first.https.test', '/', [
      '-H',
      `Host: second.https.test:${edge.edge.tlsPort}`,
      '--http1.1',
    ]);
    expect(fronted.status).toBe(421);
    expect(seen.filter((request) => request.headers.host?.startsWith('second'))).toHaveLength(0);
  });

  it('streams request and response bodies both ways, byte for byte, on HTTP/1.1 and HTTP/2', async () => {
    await httpsEdge('stream.https.test', [{ match_type: 'path_prefix', match: '/' }]);
    await eventually(
      () => curl('stream.https.test', '/'),
      (r) => r.status === 200,
    );
    const payload = Buffer.alloc(3 << 20);
    for (let index = 0; index < payload.length; index++) payload[index] = (index * 7919) % 251;
    const dir = mkdtempSync(join(tmpdir(), 'edgeward-https-'));
    try {
      const file = join(dir, 'payload.bin');
      writeFileSync(file, payload);
      for (const version of ['--http1.1', '--http2']) {
        const echoed = await curl('stream.https.test', '/echo', [
          version,
          '--data-binary',
          `@${file}`,
          '-H',
          'content-type: application/octet-stream',
        ]);
        expect(echoed.status).toBe(200);
        expect(Buffer.from(echoed.body, 'latin1').equals(payload)).toBe(true);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps a client connection alive across requests', async () => {
    await httpsEdge('keepalive.https.test', [{ match_type: 'path_prefix', match: '/' }]);
    await eventually(
      () => curl('keepalive.https.test', '/'),
      (r) => r.status === 200,
    );
    const port = edge.edge.tlsPort;
    const { stderr, stdout } = await run('curl', [
      '-sS',
      '-k',
      '-v',
      '--http1.1',
      '--resolve',
      `keepalive.https.test:${port}:127.0.0.1`,
      `https://keepalive.https.test:${port}/one`,
      `https://keepalive.https.test:${port}/two`,
    ]);
    expect(stdout).toBe('service: GET /oneservice: GET /two');
    expect(stderr).toMatch(/Re-using existing connection/);
  });

  it('keeps upstream connections alive across requests, and does not fail on one the service closed', async () => {
    await httpsEdge('upstream.https.test', [{ match_type: 'path_prefix', match: '/' }]);
    await eventually(
      () => curl('upstream.https.test', '/warm'),
      (r) => r.status === 200,
    );
    seen.length = 0;
    for (const path of ['/a', '/b', '/c']) expect((await curl('upstream.https.test', path)).status).toBe(200);
    // Three requests from three client connections, one upstream connection through the tunnel.
    expect(new Set(seen.map((request) => request.connection)).size).toBe(1);

    // The service drops idle connections after 100 ms: the edge's next request must still succeed.
    const previous = service.keepAliveTimeout;
    service.keepAliveTimeout = 100;
    try {
      expect((await curl('upstream.https.test', '/d')).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const after = await curl('upstream.https.test', '/e');
      expect(after.status).toBe(200);
      expect(after.body).toBe('service: GET /e');
    } finally {
      service.keepAliveTimeout = previous;
    }
  });

  it('carries a WebSocket upgrade to the service', async () => {
    await httpsEdge('ws.https.test', [{ match_type: 'path_prefix', match: '/' }]);
    await eventually(
      () => curl('ws.https.test', '/'),
      (r) => r.status === 200,
    );
    const port = edge.edge.tlsPort;
    // ws hands TLS options through to tls.connect; its types do not list `servername` (the SNI).
    const tlsOptions = { servername: 'ws.https.test', rejectUnauthorized: false };
    const socket = new WebSocket(`wss://127.0.0.1:${port}/chat`, {
      headers: { host: `ws.https.test:${port}` },
      ...(tlsOptions as WebSocket.ClientOptions),
    });
    await once(socket, 'open');
    socket.send('hello');
    const [reply] = (await once(socket, 'message')) as [Buffer];
    expect(String(reply)).toBe('echo /chat: hello');
    socket.close();
  });
});
