import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import http2 from 'node:http2';
import {
  connect as connectTcp,
  createServer as createTcpServer,
  type Socket,
  type Server as TcpServer,
} from 'node:net';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { waitFor } from '../support/eventually.js';
import { curlHttps } from '../support/https-curl.js';
import { eventually, headerOf, seenAt, useHarness } from '../support/https-modules-harness.js';
import { clientHelloFor, closedAfter, trickle } from '../support/slow-clients.js';

/**
 * Regression tests of the HTTPS edge's review findings, end to end through a real server, edge and
 * agent: request smuggling (HTTP/1.1 and HTTP/2), refused upgrades, invalid upstream statuses, path
 * normalization, WebSocket-to-TCP handshakes, truncated compressed answers and forwarding headers;
 * then hostile clients against the client limits (slow heads and bodies, stalled handshakes, idle
 * connections, duplicate Host headers, too many header fields) on an edge with short timeouts.
 * Every test checks what the client got and what the service behind the agent saw.
 */
const h = useHarness();
const run = promisify(execFile);

// --- Raw clients and services ------------------------------------------------------------------

/** A TLS connection to the edge (`port`: the main rig's) speaking HTTP/1.1 (ALPN), for byte-exact requests. */
async function rawTls(host: string, port = h.edge.edge.tlsPort): Promise<tls.TLSSocket> {
  const socket = tls.connect({
    host: '127.0.0.1',
    port,
    servername: host,
    ALPNProtocols: ['http/1.1'],
    rejectUnauthorized: false,
  });
  socket.on('error', () => {});
  await once(socket, 'secureConnect');
  return socket;
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * The complete HTTP/1.1 responses at the start of `text`: bodies framed by Content-Length, chunked,
 * or (neither) by the end of the connection, complete once `closed`.
 */
function parseResponses(text: string, closed = false): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end === -1) return responses;
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let at = end + 4;
    let body = '';
    if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
      for (;;) {
        const lineEnd = rest.indexOf('\r\n', at);
        if (lineEnd === -1) return responses;
        const size = Number.parseInt(rest.slice(at, lineEnd), 16);
        if (rest.length < lineEnd + 2 + size + 2) return responses;
        body += rest.slice(lineEnd + 2, lineEnd + 2 + size);
        at = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
    } else if (headers['content-length'] === undefined && status !== 204 && status !== 304) {
      if (!closed) return responses;
      body = rest.slice(at);
      at = rest.length;
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (rest.length < at + length) return responses;
      body = rest.slice(at, at + length);
      at += length;
    }
    responses.push({ status, headers, body });
    rest = rest.slice(at);
  }
}

/**
 * What arrives on `socket` until `enough` responses are complete, the peer closes, or `timeoutMs`
 * passes; `closed` tells whether the connection ended.
 */
function collect(
  socket: tls.TLSSocket,
  options: { enough?: number; timeoutMs?: number } = {},
): Promise<{ responses: RawResponse[]; text: string; closed: boolean }> {
  const { enough = Number.POSITIVE_INFINITY, timeoutMs = 3000 } = options;
  return new Promise((resolve) => {
    let text = '';
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.off('data', onData);
      resolve({ responses: parseResponses(text, closed), text, closed });
    };
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (parseResponses(text).length >= enough) finish(false);
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', onData);
    socket.once('close', () => finish(true));
    if (socket.destroyed) finish(true);
  });
}

/** One HTTP/1.1 exchange on a fresh connection: `request` as bytes, the first response back. */
async function rawExchange(host: string, request: string, port?: number): Promise<RawResponse | undefined> {
  const socket = await rawTls(host, port);
  try {
    const answer = collect(socket, { enough: 1 });
    socket.write(request, 'latin1');
    return (await answer).responses[0];
  } finally {
    socket.destroy();
  }
}

interface H2Answer {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: string;
}

/** One HTTP/2 request on `session`, its body sent as separate DATA frames (one per chunk). */
async function h2Request(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  chunks: string[] = [],
): Promise<H2Answer> {
  const stream = session.request(headers, { endStream: chunks.length === 0 });
  for (const chunk of chunks) stream.write(Buffer.from(chunk));
  if (chunks.length > 0) stream.end();
  const [answerHeaders] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
  const body: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => body.push(chunk));
  await once(stream, 'end');
  return {
    status: Number(answerHeaders[':status']),
    headers: answerHeaders,
    body: Buffer.concat(body).toString(),
  };
}

/**
 * A service on raw TCP: every request head it gets is recorded and handed to `answer` (requests
 * are GETs without bodies here), which writes whatever bytes it likes.
 */
interface RawService {
  port: number;
  heads: string[];
  connections: number;
  server: TcpServer;
}

const rawServices: TcpServer[] = [];

async function rawService(answer: (head: string, socket: Socket) => void): Promise<RawService> {
  const service: RawService = { port: 0, heads: [], connections: 0, server: createTcpServer() };
  service.server.on('connection', (socket) => {
    service.connections++;
    socket.on('error', () => {});
    let buffered = '';
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      for (let end = buffered.indexOf('\r\n\r\n'); end !== -1; end = buffered.indexOf('\r\n\r\n')) {
        const head = buffered.slice(0, end);
        buffered = buffered.slice(end + 4);
        service.heads.push(head);
        answer(head, socket);
      }
    });
  });
  service.server.listen(0, '127.0.0.1');
  await once(service.server, 'listening');
  service.port = (service.server.address() as { port: number }).port;
  rawServices.push(service.server);
  return service;
}

function okAnswer(socket: Socket, text: string): void {
  socket.write(
    `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  );
}

afterEach(() => {
  for (const server of rawServices.splice(0)) {
    server.close();
  }
});

// --- The TCP echo service of websocket_tcp_converter --------------------------------------------

let echo: TcpServer;
let echoPort: number;
/** Connections the echo service accepted. */
let echoConnections = 0;

beforeAll(async () => {
  echo = createTcpServer((socket) => {
    echoConnections++;
    socket.on('data', (chunk: Buffer) => socket.write(chunk));
    socket.on('error', () => {});
  });
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  echoPort = (echo.address() as { port: number }).port;
});

afterAll(() => echo?.close());

// --- Shared steps -------------------------------------------------------------------------------

/** An IP policy denying 127.0.0.1 (the test client), for a guarded `/admin` route. */
async function denyLocal(): Promise<string> {
  const policy = await h.create('/ip_policies', {});
  await h.create('/ip_policy_rules', { ip_policy_id: policy.id, cidr: '127.0.0.1/32', action: 'deny' });
  return String(policy.id);
}

/** Routes: `/admin` guarded by an IP restriction that denies the client, `/` open. */
async function guardedRoutes() {
  return [
    {
      match_type: 'path_prefix' as const,
      match: '/admin',
      modules: { ip_restriction: { ip_policy_ids: [await denyLocal()] } },
    },
    { match_type: 'path_prefix' as const, match: '/' },
  ];
}

/** Waits until the edge serves `path` on `host` with a 200, then forgets what the service saw. */
async function waitReady(host: string, path = '/ready') {
  const result = await eventually(
    () => h.curl(host, path),
    (r) => r.status === 200,
  );
  expect(result.status, result.stderr).toBe(200);
  h.seen.length = 0;
}

/** Nothing the service got is a request for, or a body holding, what the test marks secret. */
function expectNoLeak(secret: string, forbiddenPaths: string[]) {
  for (const request of h.seen) {
    expect(forbiddenPaths, `the service saw ${request.method} ${request.url}`).not.toContain(request.url);
    expect(request.body.toString('latin1'), `body of ${request.method} ${request.url}`).not.toContain(secret);
  }
}

describe('HTTPS edge hardening', () => {
  describe('HTTP/1.1 request smuggling: the upstream message is framed from what the edge parsed', () => {
    const victimCookie = 'session=victim-secret-4f2a9c';

    /** A whole POST whose Content-Length would swallow the next request on the upstream connection. */
    const capture = (host: string) =>
      `POST /capture HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/x-www-form-urlencoded\r\n` +
      'Content-Length: 120\r\n\r\nstolen=';

    async function attackThenVictim(host: string, attack: string, smuggled: string) {
      await h.httpsEdge(host, [{ match_type: 'path_prefix', match: '/' }]);
      await waitReady(host);

      const attacker = await rawTls(host);
      const attackAnswer = collect(attacker, { enough: 1 });
      attacker.write(attack, 'latin1');
      const attacked = await attackAnswer;
      attacker.destroy();
      expect(attacked.responses).toHaveLength(1);
      expect(attacked.responses[0]?.status).toBe(200);
      expect(attacked.responses[0]?.body).toBe('service: GET /public');

      const victim = await rawExchange(
        host,
        `GET /victim/page HTTP/1.1\r\nHost: ${host}\r\nCookie: ${victimCookie}\r\n\r\n`,
      );
      expect(victim?.status).toBe(200);
      expect(victim?.body).toBe('service: GET /victim/page');

      // The smuggled request stayed the body of the GET it came in.
      const [publicRequest, ...more] = seenAt(h.seen, '/public');
      expect(more).toHaveLength(0);
      expect(publicRequest?.method).toBe('GET');
      expect(publicRequest?.body.toString('latin1')).toBe(smuggled);
      expect(seenAt(h.seen, '/victim/page')[0]?.headers.cookie).toBe(victimCookie);
      expectNoLeak('victim-secret-4f2a9c', ['/capture']);
      expect(h.seen.map((request) => request.url)).toEqual(['/public', '/victim/page']);
    }

    it('Transfer-Encoding: chunked on a GET: the chunk holding a whole request is the GET’s body', async () => {
      const host = 'smuggle-te.hardening.test';
      const smuggled = capture(host);
      const attack =
        `GET /public HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `${Buffer.byteLength(smuggled).toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`;
      await attackThenVictim(host, attack, smuggled);
      expect(seenAt(h.seen, '/public')[0]?.headers['transfer-encoding']).toBe('chunked');
    });

    it('Content-Length named in Connection: the length is kept, so the body stays one', async () => {
      const host = 'smuggle-cl.hardening.test';
      const smuggled = capture(host);
      const attack =
        `GET /public HTTP/1.1\r\nHost: ${host}\r\nConnection: keep-alive, content-length\r\n` +
        `Content-Length: ${Buffer.byteLength(smuggled)}\r\n\r\n${smuggled}`;
      await attackThenVictim(host, attack, smuggled);
      expect(seenAt(h.seen, '/public')[0]?.headers['content-length']).toBe(
        String(Buffer.byteLength(smuggled)),
      );
    });
  });

  it('a client that closes its connection after the answer leaves nothing open on the edge (no CLOSE-WAIT)', async () => {
    const host = 'closing-clients.hardening.test';
    await h.httpsEdge(host, [{ match_type: 'path_prefix', match: '/' }]);
    await waitReady(host);
    const port = h.edge.edge.tlsPort;
    // curl closes each connection when it exits (a FIN after the answer, as most clients do).
    for (let attempt = 0; attempt < 10; attempt++) {
      const answer = await curlHttps(host, port, `/closing/${attempt}`);
      expect(answer.status, answer.stderr).toBe(200);
    }
    // The edge closes its side at once, long before the 75 s idle timeout would; a half-open
    // socket inherited from the listener sat in CLOSE-WAIT until then, one per client connection.
    const closeWait = async () =>
      (await run('ss', ['-Htan', 'state', 'close-wait', `( sport = :${port} )`])).stdout.trim();
    await waitFor(async () => (await closeWait()) === '', {
      what: 'no socket of the edge in CLOSE-WAIT',
      detail: () => 'ss lists sockets of the edge in CLOSE-WAIT',
    });
  });

  it('HTTP/2 smuggling: DATA frames without content-length go upstream chunked, never as a request', async () => {
    const host = 'smuggle-h2.hardening.test';
    await h.httpsEdge(host, await guardedRoutes());
    await waitReady(host);
    const smuggled =
      `GET /admin/h2smuggled HTTP/1.1\r\nHost: ${host}\r\nedgeward-auth-user-id: root\r\n` +
      'Content-Length: 0\r\n\r\n';
    const session = http2.connect(`https://127.0.0.1:${h.edge.edge.tlsPort}`, {
      servername: host,
      rejectUnauthorized: false,
    });
    session.on('error', () => {});
    try {
      const deleted = await h2Request(
        session,
        { ':method': 'DELETE', ':path': '/public', ':authority': host },
        [smuggled.slice(0, 20), smuggled.slice(20)],
      );
      expect(deleted.status).toBe(200);
      expect(deleted.body).toBe('service: DELETE /public');
      // The next request on the same upstream connection gets its own answer.
      const after = await h2Request(session, { ':method': 'GET', ':path': '/after', ':authority': host });
      expect(after.status).toBe(200);
      expect(after.body).toBe('service: GET /after');
    } finally {
      session.close();
    }
    const deletes = seenAt(h.seen, '/public');
    expect(deletes).toHaveLength(1);
    expect(deletes[0]?.method).toBe('DELETE');
    expect(deletes[0]?.headers['transfer-encoding']).toBe('chunked');
    expect(deletes[0]?.body.toString('latin1')).toBe(smuggled);
    expect(seenAt(h.seen, '/admin/h2smuggled')).toHaveLength(0);
    expect(h.seen.some((request) => request.headers['edgeward-auth-user-id'] !== undefined)).toBe(false);
    expect(h.seen.map((request) => request.url)).toEqual(['/public', '/after']);
  });

  it('a refused upgrade (200, not 101) is relayed and the connection closed: no raw pipe past the modules', async () => {
    const host = 'upgrade.hardening.test';
    await h.httpsEdge(host, await guardedRoutes());
    await waitReady(host);
    const upgrade = `GET /public HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`;
    const sneaked = `GET /admin/secret HTTP/1.1\r\nHost: ${host}\r\nedgeward-auth-user-id: root\r\n\r\n`;

    // The guarded request pipelined right behind the upgrade request.
    const pipelined = await rawTls(host);
    const pipelinedAnswer = collect(pipelined);
    pipelined.write(upgrade + sneaked, 'latin1');
    const first = await pipelinedAnswer;
    pipelined.destroy();
    expect(first.closed, 'the edge closes the connection').toBe(true);
    expect(first.responses).toHaveLength(1);
    expect(first.responses[0]?.status).toBe(200);
    expect(first.responses[0]?.headers.connection).toBe('close');
    expect(first.responses[0]?.body).toBe('service: GET /public');
    expect(first.text.match(/HTTP\/1\.1 \d{3}/g)).toHaveLength(1);

    // The guarded request sent once the refusal arrived.
    const later = await rawTls(host);
    const refusal = collect(later, { enough: 1 });
    later.write(upgrade, 'latin1');
    expect((await refusal).responses[0]?.status).toBe(200);
    const rest = collect(later);
    if (!later.destroyed && later.writable) later.write(sneaked, 'latin1');
    const second = await rest;
    later.destroy();
    expect(second.closed, 'the edge closes the connection').toBe(true);
    expect(second.text).toBe('');

    // A request to the guarded route on its own is refused: the route is guarded indeed.
    const guarded = await rawExchange(host, sneaked);
    expect(guarded?.status).toBe(403);
    expect(guarded?.headers['edgeward-error']).toBe('ip-denied');

    const publics = seenAt(h.seen, '/public');
    expect(publics).toHaveLength(2);
    expect(publics[0]?.headers.upgrade).toBe('websocket');
    expect(seenAt(h.seen, '/admin/secret')).toHaveLength(0);
    expect(h.seen.map((request) => request.url)).toEqual(['/public', '/public']);
  });

  it('an upstream status no client accepts (600) is a 502 upstream-failed over HTTP/2 and HTTP/1.1', async () => {
    const host = 'status.hardening.test';
    const service = await rawService((head, socket) => {
      if (head.startsWith('GET /weird ')) {
        socket.end('HTTP/1.1 600 Weird\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nweird');
      } else okAnswer(socket, 'raw: ok');
    });
    await h.httpsEdge(host, [{ match_type: 'path_prefix', match: '/' }], {
      forward: `tcp://127.0.0.1:${service.port}`,
    });
    await waitReady(host, '/healthy');
    service.heads.length = 0;

    const overHttp2 = await h.curl(host, '/weird', ['--http2']);
    expect(overHttp2.code, overHttp2.stderr).toBe(0);
    expect(overHttp2.headers).toMatch(/^HTTP\/2 502/);
    expect(headerOf(overHttp2, 'edgeward-error')).toBe('upstream-failed');
    const overHttp1 = await h.curl(host, '/weird', ['--http1.1']);
    expect(overHttp1.code, overHttp1.stderr).toBe(0);
    expect(overHttp1.headers).toMatch(/^HTTP\/1\.1 502/);
    expect(headerOf(overHttp1, 'edgeward-error')).toBe('upstream-failed');
    const raw = await rawExchange(host, `GET /weird HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    expect(raw?.status).toBe(502);

    // The edge is still up, for this route and for others.
    const healthy = await h.curl(host, '/healthy', ['--http2']);
    expect(healthy.status).toBe(200);
    expect(healthy.body).toBe('raw: ok');
    expect(service.heads.map((head) => head.split('\r\n')[0])).toEqual([
      'GET /weird HTTP/1.1',
      'GET /weird HTTP/1.1',
      'GET /weird HTTP/1.1',
      'GET /healthy HTTP/1.1',
    ]);
    await h.httpsEdge('status-other.hardening.test', [{ match_type: 'path_prefix', match: '/' }]);
    await waitReady('status-other.hardening.test', '/other');
    expect((await h.curl('status-other.hardening.test', '/other')).status).toBe(200);
    expect(seenAt(h.seen, '/other')).toHaveLength(1);
  });

  it('path normalization: the route is chosen by the path the service gets; ambiguous targets are 400', async () => {
    const host = 'paths.hardening.test';
    await h.httpsEdge(host, await guardedRoutes());
    await waitReady(host);
    const get = (path: string) => h.curl(host, path, ['--path-as-is']);

    for (const path of ['//admin/secret', '/%61dmin/secret', '/./admin/secret', '/public/../admin/secret']) {
      const denied = await get(path);
      expect(denied.status, path).toBe(403);
      expect(headerOf(denied, 'edgeward-error'), path).toBe('ip-denied');
    }
    for (const path of [
      '/x/..;/admin/secret',
      '/x/..%2fadmin/secret',
      '/a%2Fb',
      '/x/..%5cadmin/secret',
      '/;x/admin/secret',
      '/x/..%3b/admin/secret',
      '/x/%2e%2e%3b/admin/secret',
    ]) {
      const refused = await get(path);
      expect(refused.status, path).toBe(400);
      expect(headerOf(refused, 'edgeward-error'), path).toBe('bad-request');
    }
    const resolved = await get('/x/../public');
    expect(resolved.status).toBe(200);
    expect(resolved.body).toBe('service: GET /public');
    const decoded = await get('/p%61th?q=%61');
    expect(decoded.status).toBe(200);
    expect(decoded.body).toBe('service: GET /path?q=%61');

    expect(h.seen.map((request) => request.url)).toEqual(['/public', '/path?q=%61']);
    for (const request of h.seen) expect(decodeURIComponent(request.url)).not.toMatch(/admin/i);
  });

  it('websocket_tcp_converter: an upgrade without Sec-WebSocket-Key is a 400 and opens no TCP connection', async () => {
    const host = 'wskey.hardening.test';
    await h.httpsEdge(
      host,
      [{ match_type: 'path_prefix', match: '/', modules: { websocket_tcp_converter: {} } }],
      {
        forward: `tcp://127.0.0.1:${echoPort}`,
      },
    );
    const plain = await eventually(
      () => h.curl(host, '/'),
      (r) => r.status === 426,
    );
    expect(plain.status, plain.stderr).toBe(426);
    const before = echoConnections;
    const upgrade = [
      '--http1.1',
      '-H',
      'Connection: Upgrade',
      '-H',
      'Upgrade: websocket',
      '-H',
      'Sec-WebSocket-Version: 13',
    ];
    for (let attempt = 0; attempt < 5; attempt++) {
      const refused = await h.curl(host, '/', upgrade);
      expect(refused.status).toBe(400);
      expect(headerOf(refused, 'edgeward-error')).toBe('bad-request');
    }
    const bare = await rawExchange(
      host,
      `GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
    );
    expect(bare?.status).toBe(400);

    // A real handshake after them: its connection is the only one the TCP service ever got.
    const port = h.edge.edge.tlsPort;
    const tlsOptions = { servername: host, rejectUnauthorized: false };
    const socket = new WebSocket(`wss://127.0.0.1:${port}/`, {
      headers: { host: `${host}:${port}` },
      ...(tlsOptions as WebSocket.ClientOptions),
    });
    await once(socket, 'open');
    const reply = once(socket, 'message');
    socket.send('ping over tcp');
    expect(String((await reply)[0])).toBe('ping over tcp');
    socket.close();
    await once(socket, 'close');
    expect(echoConnections - before).toBe(1);
  });

  it('compression: an upstream that stops mid-body fails the client fast, and the edge goes on', async () => {
    const host = 'truncated.hardening.test';
    const service = await rawService((head, socket) => {
      if (head.startsWith('GET /truncated ')) {
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n');
        socket.end('x'.repeat(5000));
      } else okAnswer(socket, 'raw: ok '.repeat(200));
    });
    await h.httpsEdge(host, [{ match_type: 'path_prefix', match: '/', modules: { compression: {} } }], {
      forward: `tcp://127.0.0.1:${service.port}`,
    });
    await waitReady(host, '/healthy');
    service.heads.length = 0;

    for (const version of ['--http2', '--http1.1']) {
      const started = Date.now();
      const truncated = await h.curl(host, '/truncated', ['--compressed', version, '--max-time', '6']);
      const elapsed = Date.now() - started;
      expect(truncated.code, `${version}: curl must fail`).not.toBe(0);
      expect(truncated.code, `${version}: not a timeout (${truncated.stderr})`).not.toBe(28);
      expect(elapsed, version).toBeLessThan(2500);
      expect(truncated.body.length, version).toBeLessThan(100000);
    }
    const healthy = await h.curl(host, '/healthy', ['--compressed']);
    expect(healthy.status).toBe(200);
    expect(headerOf(healthy, 'content-encoding')).toBe('br');
    expect(healthy.body).toBe('raw: ok '.repeat(200));
    expect(service.heads.map((head) => head.split('\r\n')[0])).toEqual([
      'GET /truncated HTTP/1.1',
      'GET /truncated HTTP/1.1',
      'GET /healthy HTTP/1.1',
    ]);
  });

  it('X-Forwarded-For from a client is appended to: the last entry is the address the edge saw', async () => {
    const host = 'forwarded.hardening.test';
    await h.httpsEdge(host, [{ match_type: 'path_prefix', match: '/' }]);
    await waitReady(host);
    const spoofed = ['-H', 'X-Forwarded-For: 203.0.113.9', '-H', 'X-Forwarded-Host: evil.example'];
    expect((await h.curl(host, '/xff-h2', ['--http2', ...spoofed])).status).toBe(200);
    expect((await h.curl(host, '/xff-h1', ['--http1.1', ...spoofed])).status).toBe(200);
    const twice = await rawExchange(
      host,
      `GET /xff-twice HTTP/1.1\r\nHost: ${host}\r\nX-Forwarded-For: 198.51.100.1\r\n` +
        'X-Forwarded-For: 203.0.113.9, 192.0.2.7\r\n\r\n',
    );
    expect(twice?.status).toBe(200);

    for (const path of ['/xff-h2', '/xff-h1']) {
      const [seen] = seenAt(h.seen, path);
      expect(seen?.headers['x-forwarded-for'], path).toBe('203.0.113.9, 127.0.0.1');
      // The Host the client sent (curl adds the port), never the client's X-Forwarded-Host.
      expect(seen?.headers['x-forwarded-host'], path).toBe(`${host}:${h.edge.edge.tlsPort}`);
      expect(seen?.headers['x-forwarded-proto'], path).toBe('https');
    }
    expect(seenAt(h.seen, '/xff-twice')[0]?.headers['x-forwarded-for']).toBe(
      '198.51.100.1, 203.0.113.9, 192.0.2.7, 127.0.0.1',
    );
  });

  it('Forwarded (RFC 7239) from a client is appended to, as X-Forwarded-For: its last element is the edge one', async () => {
    const host = 'rfc7239.hardening.test';
    await h.httpsEdge(host, [{ match_type: 'path_prefix', match: '/' }]);
    await waitReady(host);
    const answer = await h.curl(host, '/forwarded', [
      '-H',
      'Forwarded: for=203.0.113.9;proto=http',
      '-H',
      'X-Forwarded-For: 203.0.113.9',
    ]);
    expect(answer.status).toBe(200);
    const [seen] = seenAt(h.seen, '/forwarded');
    expect(seen?.headers['x-forwarded-for']).toBe('203.0.113.9, 127.0.0.1');
    expect(seen?.headers.forwarded).toBe(
      `for=203.0.113.9;proto=http, for=127.0.0.1;host="${host}:${h.edge.edge.tlsPort}";proto=https`,
    );
  });
});

describe('HTTPS client limits: header, request and idle timeouts, Host, header fields', () => {
  /** Short timeouts, so each is seen in a second or so (the defaults are 20 s, 300 s and 75 s). */
  const LIMITS = { headerTimeoutMs: 1000, requestTimeoutMs: 4000, idleTimeoutMs: 1500 };
  /**
   * How late a timeout may act: Node sweeps HTTP/1.1 timeouts every quarter of the shortest one
   * here, HTTP/1.1 keep-alive adds Node's 1 s buffer, and the machine may be loaded.
   */
  const SLACK_MS = 2500;
  const l = useHarness({ httpsClientLimits: LIMITS });
  const port = () => l.edge.edge.tlsPort;

  async function edgeFor(host: string, forward?: string, modules?: Record<string, unknown>) {
    await l.httpsEdge(host, [{ match_type: 'path_prefix', match: '/', ...(modules && { modules }) }], {
      ...(forward && { forward }),
    });
    const result = await eventually(
      () => curlHttps(host, port(), '/ready'),
      (r) => r.status === 200,
    );
    expect(result.status, result.stderr).toBe(200);
    l.seen.length = 0;
  }

  function h2Connect(host: string): http2.ClientHttp2Session {
    const session = http2.connect(`https://127.0.0.1:${port()}`, {
      servername: host,
      rejectUnauthorized: false,
    });
    session.on('error', () => {});
    return session;
  }

  /** A service whose `/stream` answers 12 chunks 400 ms apart: 4.8 s, longer than every timeout. */
  async function streamingService(): Promise<number> {
    const service = createHttpServer((request, response) => {
      if (request.url !== '/stream') {
        response.end('ready');
        return;
      }
      response.writeHead(200, { 'content-type': 'text/plain' });
      let sent = 0;
      const timer = setInterval(() => {
        response.write(`chunk ${sent}\n`);
        if (++sent === 12) {
          clearInterval(timer);
          response.end();
        }
      }, 400);
      response.on('close', () => clearInterval(timer));
    });
    service.listen(0, '127.0.0.1');
    await once(service, 'listening');
    httpServices.push(service);
    return (service.address() as { port: number }).port;
  }
  const httpServices: HttpServer[] = [];
  afterAll(() => {
    for (const service of httpServices) {
      service.closeAllConnections();
      service.close();
    }
  });

  it('HTTP/1.1: a connection that sends no head, or trickles one, is answered 408 and closed at the header timeout', async () => {
    const host = 'slow-head.limits.test';
    await edgeFor(host);

    const silent = await rawTls(host, port());
    const silentSince = performance.now();
    const silentAnswer = collect(silent, { timeoutMs: LIMITS.headerTimeoutMs + SLACK_MS });
    const trickling = await rawTls(host, port());
    const tricklingSince = performance.now();
    const tricklingAnswer = collect(trickling, { timeoutMs: LIMITS.headerTimeoutMs + SLACK_MS });
    trickle(trickling, `GET /slow HTTP/1.1\r\nHost: ${host}\r\nX-Slow: ${'a'.repeat(100)}\r\n\r\n`, 100);
    // On a kept-alive connection, the next head's clock starts at its first byte.
    const kept = await rawTls(host, port());
    const first = collect(kept, { enough: 1 });
    kept.write(`GET /first HTTP/1.1\r\nHost: ${host}\r\n\r\n`, 'latin1');
    expect((await first).responses[0]?.status).toBe(200);
    const keptSince = performance.now();
    const keptAnswer = collect(kept, { timeoutMs: LIMITS.headerTimeoutMs + SLACK_MS });
    trickle(kept, `GET /second HTTP/1.1\r\nHost: ${host}\r\nX-Slow: ${'a'.repeat(100)}\r\n\r\n`, 100);

    for (const [name, answer, since] of [
      ['silent', silentAnswer, silentSince],
      ['trickling', tricklingAnswer, tricklingSince],
      ['kept-alive', keptAnswer, keptSince],
    ] as const) {
      const result = await answer;
      const elapsed = performance.now() - since;
      expect(result.closed, `${name}: the edge closes the connection`).toBe(true);
      expect(result.text, name).toMatch(/^HTTP\/1\.1 408 /);
      expect(elapsed, name).toBeGreaterThanOrEqual(LIMITS.headerTimeoutMs * 0.9);
      expect(elapsed, name).toBeLessThan(LIMITS.headerTimeoutMs + SLACK_MS);
    }
    expect(l.seen.map((request) => request.url)).toEqual(['/first']);
  });

  it('HTTP/1.1: an idle kept-alive connection is closed after the idle timeout', async () => {
    const host = 'idle-h1.limits.test';
    await edgeFor(host);
    const socket = await rawTls(host, port());
    const first = collect(socket, { enough: 1 });
    socket.write(`GET /once HTTP/1.1\r\nHost: ${host}\r\n\r\n`, 'latin1');
    const answered = await first;
    expect(answered.responses[0]?.status).toBe(200);
    expect(answered.responses[0]?.headers['keep-alive']).toBe('timeout=1');
    const since = performance.now();
    const idle = await collect(socket, { timeoutMs: LIMITS.idleTimeoutMs + SLACK_MS });
    const elapsed = performance.now() - since;
    expect(idle.closed, 'the edge closes the idle connection').toBe(true);
    expect(idle.text).toBe('');
    expect(elapsed).toBeGreaterThanOrEqual(LIMITS.idleTimeoutMs * 0.9);
  });

  it('TLS: a handshake that stalls after its ClientHello is cut at the header timeout', async () => {
    const host = 'stalled-handshake.limits.test';
    await edgeFor(host);
    const hello = await clientHelloFor(host);
    const socket = connectTcp({ host: '127.0.0.1', port: port() });
    socket.on('error', () => {});
    await once(socket, 'connect');
    const since = performance.now();
    socket.write(hello);
    socket.resume();
    const elapsed = await Promise.race([
      closedAfter(socket, since),
      new Promise<number>((resolve) => setTimeout(() => resolve(Number.POSITIVE_INFINITY), 10_000)),
    ]);
    socket.destroy();
    expect(elapsed).toBeGreaterThanOrEqual(LIMITS.headerTimeoutMs * 0.9);
    expect(elapsed).toBeLessThan(LIMITS.headerTimeoutMs + SLACK_MS);
  });

  it('HTTP/2: a session with no request, or none since its last stream (PINGs or not), gets GOAWAY and is closed', async () => {
    const host = 'idle-h2.limits.test';
    await edgeFor(host);
    const watch = (session: http2.ClientHttp2Session, since: number) =>
      new Promise<{ elapsed: number; goaway: boolean }>((resolve) => {
        let goaway = false;
        session.once('goaway', () => {
          goaway = true;
        });
        const deadline = setTimeout(() => resolve({ elapsed: Number.POSITIVE_INFINITY, goaway }), 10_000);
        session.once('close', () => {
          clearTimeout(deadline);
          resolve({ elapsed: performance.now() - since, goaway });
        });
      });

    const unused = h2Connect(host);
    await once(unused, 'connect');
    const unusedClosed = watch(unused, performance.now());

    const used = h2Connect(host);
    const answer = await h2Request(used, { ':method': 'GET', ':path': '/h2-once', ':authority': host });
    expect(answer.status).toBe(200);
    const usedClosed = watch(used, performance.now());
    // PINGs are frames too: they must not keep an idle session.
    const pings = setInterval(() => {
      if (!used.closed && !used.destroyed) used.ping(() => {});
    }, 200);
    try {
      const [noRequest, idle] = await Promise.all([unusedClosed, usedClosed]);
      expect(noRequest.goaway, 'GOAWAY before closing').toBe(true);
      expect(noRequest.elapsed).toBeGreaterThanOrEqual(LIMITS.headerTimeoutMs * 0.9);
      expect(noRequest.elapsed).toBeLessThan(LIMITS.headerTimeoutMs + SLACK_MS);
      expect(idle.goaway, 'GOAWAY before closing').toBe(true);
      expect(idle.elapsed).toBeGreaterThanOrEqual(LIMITS.idleTimeoutMs * 0.9);
      expect(idle.elapsed).toBeLessThan(LIMITS.idleTimeoutMs + SLACK_MS);
    } finally {
      clearInterval(pings);
      unused.destroy();
      used.destroy();
    }
  });

  it('a slow streaming response longer than every timeout is not cut (HTTP/1.1, HTTP/2), nor an idle WebSocket', async () => {
    const host = 'streaming.limits.test';
    await edgeFor(host, `http://127.0.0.1:${await streamingService()}`);
    const wsHost = 'websocket.limits.test';
    await l.httpsEdge(
      wsHost,
      [{ match_type: 'path_prefix', match: '/', modules: { websocket_tcp_converter: {} } }],
      {
        forward: `tcp://127.0.0.1:${echoPort}`,
      },
    );
    const plain = await eventually(
      () => curlHttps(wsHost, port(), '/'),
      (r) => r.status === 426,
    );
    expect(plain.status, plain.stderr).toBe(426);

    const webSocket = async () => {
      const socket = new WebSocket(`wss://127.0.0.1:${port()}/`, {
        headers: { host: `${wsHost}:${port()}` },
        ...({ servername: wsHost, rejectUnauthorized: false } as WebSocket.ClientOptions),
      });
      socket.on('error', () => {});
      await once(socket, 'open');
      await new Promise((resolve) => setTimeout(resolve, LIMITS.requestTimeoutMs + 1000));
      const reply = once(socket, 'message');
      socket.send('still there');
      const [message] = await reply;
      socket.close();
      return String(message);
    };
    const expected = Array.from({ length: 12 }, (_, index) => `chunk ${index}\n`).join('');
    const [overHttp1, overHttp2, echoed] = await Promise.all([
      curlHttps(host, port(), '/stream', ['--http1.1', '--max-time', '20']),
      curlHttps(host, port(), '/stream', ['--http2', '--max-time', '20']),
      webSocket(),
    ]);
    for (const [name, result] of [
      ['HTTP/1.1', overHttp1],
      ['HTTP/2', overHttp2],
    ] as const) {
      expect(result.code, `${name}: ${result.stderr}`).toBe(0);
      expect(result.status, name).toBe(200);
      expect(result.body, name).toBe(expected);
    }
    expect(echoed).toBe('still there');
  });

  it('a request body that does not arrive whole in the request timeout is answered 408 (HTTP/1.1, HTTP/2)', async () => {
    const host = 'slow-body.limits.test';
    await edgeFor(host);

    const overHttp1 = async () => {
      const socket = await rawTls(host, port());
      const since = performance.now();
      const answer = collect(socket, { timeoutMs: LIMITS.requestTimeoutMs + SLACK_MS });
      socket.write(`POST /upload HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 1000\r\n\r\n`, 'latin1');
      // A byte every 200 ms: never idle, never whole.
      trickle(socket, 'b'.repeat(1000), 200);
      const result = await answer;
      return { result, elapsed: performance.now() - since };
    };
    const overHttp2 = async () => {
      const session = h2Connect(host);
      try {
        const since = performance.now();
        const stream = session.request(
          { ':method': 'POST', ':path': '/upload', ':authority': host },
          { endStream: false },
        );
        stream.on('error', () => {});
        const bytes = setInterval(() => {
          if (!stream.destroyed && stream.writable) stream.write('b');
        }, 200);
        const deadline = setTimeout(() => stream.destroy(), LIMITS.requestTimeoutMs + SLACK_MS);
        try {
          const headers = await new Promise<http2.IncomingHttpHeaders>((resolve) => {
            stream.once('response', resolve);
            stream.once('close', () => resolve({}));
          });
          return { headers, elapsed: performance.now() - since };
        } finally {
          clearInterval(bytes);
          clearTimeout(deadline);
        }
      } finally {
        session.destroy();
      }
    };
    const [h1, h2] = await Promise.all([overHttp1(), overHttp2()]);
    expect(h1.result.closed, 'HTTP/1.1: closed').toBe(true);
    expect(h1.result.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(h1.elapsed).toBeGreaterThanOrEqual(LIMITS.requestTimeoutMs * 0.9);
    expect(h1.elapsed).toBeLessThan(LIMITS.requestTimeoutMs + SLACK_MS);
    expect(Number(h2.headers[':status'])).toBe(408);
    expect(h2.headers['edgeward-error']).toBe('request-timeout');
    expect(h2.elapsed).toBeGreaterThanOrEqual(LIMITS.requestTimeoutMs * 0.9);
    expect(h2.elapsed).toBeLessThan(LIMITS.requestTimeoutMs + SLACK_MS);
  });

  it('300 slowloris connections at once are all closed at the header timeout, and curl is served meanwhile', async () => {
    const host = 'slowloris.limits.test';
    await edgeFor(host);
    const head = `GET /loris HTTP/1.1\r\nHost: ${host}\r\nX-Slow: ${'a'.repeat(200)}\r\n\r\n`;
    const lifetimes: Promise<number>[] = [];
    const sockets: tls.TLSSocket[] = [];
    try {
      for (let batch = 0; batch < 10; batch++) {
        const opened = await Promise.all(
          Array.from({ length: 30 }, async () => {
            const socket = await rawTls(host, port());
            return { socket, since: performance.now() };
          }),
        );
        for (const { socket, since } of opened) {
          sockets.push(socket);
          lifetimes.push(
            Promise.race([
              closedAfter(socket, since),
              new Promise<number>((resolve) =>
                setTimeout(() => resolve(Number.POSITIVE_INFINITY), LIMITS.headerTimeoutMs + 10_000),
              ),
            ]),
          );
          trickle(socket, head, 250);
        }
      }
      const served = await curlHttps(host, port(), '/meanwhile');
      expect(served.status, served.stderr).toBe(200);
      expect(served.body).toBe('service: GET /meanwhile');
      const closed = await Promise.all(lifetimes);
      const late = closed.filter((elapsed) => elapsed >= LIMITS.headerTimeoutMs + SLACK_MS);
      expect(late, `connections open past ${LIMITS.headerTimeoutMs + SLACK_MS} ms`).toEqual([]);
      expect(l.seen.map((request) => request.url)).toEqual(['/meanwhile']);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it('two Host headers, or :authority and host naming different hosts, are a 400 bad-request', async () => {
    const host = 'hosts.limits.test';
    await edgeFor(host);
    for (const second of [host, 'evil.example']) {
      const twice = await rawExchange(
        host,
        `GET /twice HTTP/1.1\r\nHost: ${host}\r\nHost: ${second}\r\n\r\n`,
        port(),
      );
      expect(twice?.status, second).toBe(400);
      expect(twice?.headers['edgeward-error'], second).toBe('bad-request');
      expect(twice?.body).toContain('more than one Host header');
    }
    const session = h2Connect(host);
    try {
      const differ = await h2Request(session, {
        ':method': 'GET',
        ':path': '/differ',
        ':authority': host,
        host: 'evil.example',
      });
      expect(differ.status).toBe(400);
      expect(differ.headers['edgeward-error']).toBe('bad-request');
      const same = await h2Request(session, { ':method': 'GET', ':path': '/same', ':authority': host, host });
      expect(same.status).toBe(200);
    } finally {
      session.close();
    }
    expect(l.seen.map((request) => request.url)).toEqual(['/same']);
  });

  it('more header fields than the limit (100) are a 431 too-many-headers over HTTP/1.1 and HTTP/2; 100 pass whole', async () => {
    const host = 'headers.limits.test';
    await edgeFor(host);
    const many = Array.from({ length: 150 }, (_, index) => ['-H', `X-Field-${index}: ${index}`]).flat();
    for (const version of ['--http1.1', '--http2']) {
      const refused = await curlHttps(host, port(), '/many', [version, ...many]);
      expect(refused.code, refused.stderr).toBe(0);
      expect(refused.status, version).toBe(431);
      expect(headerOf(refused, 'edgeward-error'), version).toBe('too-many-headers');
    }

    const fields = (count: number) => Array.from({ length: count }, (_, index) => `x-field-${index}`);
    const h1 = (count: number) =>
      rawExchange(
        host,
        `GET /h1-${count} HTTP/1.1\r\nHost: ${host}\r\n${fields(count - 1)
          .map((name) => `${name}: v\r\n`)
          .join('')}\r\n`,
        port(),
      );
    expect((await h1(100))?.status).toBe(200);
    const h1Refused = await h1(101);
    expect(h1Refused?.status).toBe(431);
    expect(h1Refused?.headers['edgeward-error']).toBe('too-many-headers');

    const session = h2Connect(host);
    try {
      const h2 = (count: number) =>
        h2Request(session, {
          ':method': 'GET',
          ':path': `/h2-${count}`,
          ':authority': host,
          ...Object.fromEntries(fields(count).map((name) => [name, 'v'])),
        });
      expect((await h2(100)).status).toBe(200);
      const h2Refused = await h2(101);
      expect(h2Refused.status).toBe(431);
      expect(h2Refused.headers['edgeward-error']).toBe('too-many-headers');
    } finally {
      session.close();
    }
    expect(l.seen.map((request) => request.url)).toEqual(['/h1-100', '/h2-100']);
    for (const request of l.seen) {
      for (const name of fields(request.url === '/h1-100' ? 99 : 100)) {
        expect(request.headers[name], `${request.url}: ${name}`).toBe('v');
      }
    }
  });
});
