import { spawn } from 'node:child_process';
import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type TlsCarriedRoute,
  type TlsEdgeEvent,
  TlsEdgeListener,
  type TlsEdgeListenerOptions,
  type TlsRoute,
} from '../../src/edge/listeners/tls-listener.js';
import { eventually, waitFor } from '../support/eventually.js';
import { type OpensslCertificate, OpensslWorkspace } from '../support/openssl.js';

/**
 * The public TLS listener on 127.0.0.1 with real clients (curl, openssl s_client, node's tls):
 * SNI routing, TLS termination with min versions and mutual TLS, passthrough to a TLS upstream
 * whose certificate the client verifies, refusals before the handshake, and graceful close.
 * Each route's `connect()` opens a plain TCP connection to a local service, standing in for a
 * stream to an agent.
 */

let ssl: OpensslWorkspace;
let edgeCa: OpensslCertificate;
let upstreamCa: OpensslCertificate;
let clientCa: OpensslCertificate;
const files: Record<string, string> = {};
const closers: Array<() => unknown> = [];

let listener: TlsEdgeListener;
let port: number;
const events: TlsEdgeEvent[] = [];
/** edgeIds in the order their `connect()` was called. */
const connects: string[] = [];
const routes = new Map<string, TlsRoute>();

function leaf(hosts: string[], issuer: OpensslCertificate, usage = 'serverAuth'): OpensslCertificate {
  return ssl.certificate({
    subject: `/CN=${hosts[0]}`,
    key: ssl.key('ec'),
    issuer,
    extensions: [
      'basicConstraints = critical,CA:FALSE',
      `extendedKeyUsage = ${usage}`,
      ...(usage === 'serverAuth' ? [`subjectAltName = ${hosts.map((host) => `DNS:${host}`).join(',')}`] : []),
    ],
  });
}

function ca(name: string): OpensslCertificate {
  return ssl.certificate({
    subject: `/CN=${name}`,
    key: ssl.key('ec'),
    extensions: ['basicConstraints = critical,CA:TRUE', 'keyUsage = critical,keyCertSign,cRLSign'],
  });
}

async function listening(server: net.Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(() => server.close());
  return (server.address() as net.AddressInfo).port;
}

/** A plain HTTP service that names itself and echoes POST bodies; closes after each response. */
async function httpService(name: string): Promise<number> {
  const server: HttpServer = createHttpServer((request, response) => {
    response.setHeader('connection', 'close');
    if (request.method === 'POST') {
      request.pipe(response);
      return;
    }
    response.end(`${name}: ${request.method} ${request.url}`);
  });
  return listening(server);
}

/** Plain TCP echo; ends its side once the client has ended (half-close). */
async function echoService(): Promise<number> {
  return listening(net.createServer({ allowHalfOpen: true }, (socket) => socket.pipe(socket)));
}

/** Every stream the routes' `connect()` opened, to check none is left open. */
const upstreams: net.Socket[] = [];

function plainConnect(servicePort: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port: servicePort, allowHalfOpen: true });
    upstreams.push(socket);
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

function addRoute(serverName: string, route: Omit<TlsCarriedRoute, 'connect'> & { to?: number }): void {
  const { to, ...rest } = route;
  routes.set(serverName, {
    ...rest,
    connect: async () => {
      connects.push(route.edgeId);
      if (to === undefined) throw new Error('no online session for this edge');
      return plainConnect(to);
    },
  });
}

/** Exact names first, then a wildcard one label up: what the edge's router does, in small. */
const resolve: TlsEdgeListenerOptions['resolve'] = (serverName, clientIp) => {
  expect(clientIp).toBe('127.0.0.1');
  if (serverName === undefined) return undefined;
  return routes.get(serverName) ?? routes.get(`*.${serverName.slice(serverName.indexOf('.') + 1)}`);
};

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], input?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill(), 8_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

function curl(host: string, path: string, cacert: string, extra: string[] = []): Promise<Run> {
  return run('curl', [
    '-sS',
    '--max-time',
    '5',
    '--resolve',
    `${host}:${port}:127.0.0.1`,
    '--cacert',
    cacert,
    ...extra,
    `https://${host}:${port}${path}`,
  ]);
}

/** openssl s_client sending one HTTP/1.0 request (the service closes after answering). */
function sClient(serverName: string | undefined, args: string[] = []): Promise<Run> {
  return run(
    'openssl',
    [
      's_client',
      '-connect',
      `127.0.0.1:${port}`,
      ...(serverName ? ['-servername', serverName] : ['-noservername']),
      '-CAfile',
      files.edgeCa as string,
      '-verify_return_error',
      '-ign_eof',
      ...args,
    ],
    `GET /via-openssl HTTP/1.0\r\nHost: ${serverName}\r\n\r\n`,
  );
}

/** The event matching `predicate`, waiting for it up to 3 s. */
function eventOf(predicate: (event: TlsEdgeEvent) => boolean): Promise<TlsEdgeEvent> {
  return waitFor(() => events.find(predicate), {
    what: 'the event',
    timeoutMs: 3_000,
    intervalMs: 10,
    detail: () => `no such event in ${JSON.stringify(events)}`,
  });
}

/** At least `count` events matching `predicate`, waiting for them up to 3 s. */
function eventsOf(predicate: (event: TlsEdgeEvent) => boolean, count: number): Promise<TlsEdgeEvent[]> {
  return waitFor(
    () => {
      const found = events.filter(predicate);
      return found.length >= count && found;
    },
    {
      what: `${count} such events`,
      timeoutMs: 3_000,
      intervalMs: 10,
      detail: () => `fewer than ${count} such events in ${JSON.stringify(events)}`,
    },
  );
}

/** Outcomes (non-`closed` events) of closed connections of `edgeId`, once they are all closed. */
async function outcomesOf(edgeId: string | undefined): Promise<string[]> {
  await eventOf((event) => event.type === 'closed' && event.edgeId === edgeId);
  return events
    .filter((event) => event.edgeId === edgeId && event.type !== 'closed')
    .map((event) => event.type);
}

/** The last TLS session (ticket) each client received, to resume with. */
const sessions = new WeakMap<tls.TLSSocket, Buffer>();

function tlsClient(
  options: tls.ConnectionOptions & {
    listenerPort?: number;
    maxSendFragment?: number;
    allowHalfOpen?: boolean;
  },
): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: options.listenerPort ?? port, ...options });
    socket.on('session', (session: Buffer) => sessions.set(socket, session));
    // Before the TCP connection is up, so the ClientHello is already sent in records this small.
    if (options.maxSendFragment) expect(socket.setMaxSendFragment(options.maxSendFragment)).toBe(true);
    socket.once('secureConnect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Writes `payload`, half-closes, and collects everything until the other side ends. */
async function roundTrip(socket: tls.TLSSocket, payload: Buffer): Promise<Buffer> {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = once(socket, 'end');
  socket.end(payload);
  await ended;
  return Buffer.concat(chunks);
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

beforeAll(async () => {
  ssl = new OpensslWorkspace();
  edgeCa = ca('edge test CA');
  upstreamCa = ca('upstream test CA');
  clientCa = ca('client test CA');
  const otherClientCa = ca('another client CA');
  files.edgeCa = edgeCa.path;
  files.upstreamCa = upstreamCa.path;
  const client = leaf(['client one'], clientCa, 'clientAuth');
  const stranger = leaf(['client two'], otherClientCa, 'clientAuth');
  files.clientCert = client.path;
  files.clientKey = client.key.path;
  files.strangerCert = stranger.path;
  files.strangerKey = stranger.key.path;
  // Same CN as the right client, from another CA: only the signature tells them apart.
  const impostor = ssl.certificate({
    subject: '/CN=client one',
    key: ssl.key('ec'),
    issuer: ca('client test CA'),
    extensions: ['basicConstraints = critical,CA:FALSE', 'extendedKeyUsage = clientAuth'],
  });
  files.impostorCert = impostor.path;
  files.impostorKey = impostor.key.path;

  const pem = (certificate: OpensslCertificate) => ({ cert: certificate.pem, key: certificate.key.pem });
  const app = pem(leaf(['app.example.com'], edgeCa));
  const other = pem(leaf(['other.example.com'], edgeCa));
  const wild = pem(leaf(['*.wild.example.com'], edgeCa));
  const shared = pem(
    leaf(
      [
        'tls13.example.com',
        'tls11.example.com',
        'mtls.example.com',
        'offline.example.com',
        'echo.example.com',
      ],
      edgeCa,
    ),
  );
  const upstream = pem(leaf(['pass.example.com', 'echo-pass.example.com'], upstreamCa));

  const appService = await httpService('app');
  const otherService = await httpService('other');
  const wildService = await httpService('wild');
  const echo = await echoService();
  // The upstream of passthrough edges terminates TLS itself, with a certificate the edge never sees.
  const https: HttpsServer = createHttpsServer(upstream, (request, response) => {
    const socket = request.socket as tls.TLSSocket;
    response.setHeader('connection', 'close');
    response.end(`upstream TLS: ${socket.servername} ${socket.getProtocol()} ${request.url}`);
  });
  const upstreamPort = await listening(https);
  const upstreamEcho = await listening(
    tls.createServer({ ...upstream, allowHalfOpen: true }, (socket) => socket.pipe(socket)),
  );

  addRoute('app.example.com', {
    edgeId: 'edg_app',
    allowed: true,
    mode: 'terminate',
    certificate: app,
    to: appService,
  });
  addRoute('other.example.com', {
    edgeId: 'edg_other',
    allowed: true,
    mode: 'terminate',
    certificate: other,
    to: otherService,
  });
  addRoute('*.wild.example.com', {
    edgeId: 'edg_wild',
    allowed: true,
    mode: 'terminate',
    certificate: wild,
    to: wildService,
  });
  addRoute('pass.example.com', { edgeId: 'edg_pass', allowed: true, mode: 'passthrough', to: upstreamPort });
  addRoute('echo-pass.example.com', {
    edgeId: 'edg_echo_pass',
    allowed: true,
    mode: 'passthrough',
    to: upstreamEcho,
  });
  addRoute('tls13.example.com', {
    edgeId: 'edg_tls13',
    allowed: true,
    mode: 'terminate',
    certificate: shared,
    minVersion: '1.3',
    to: appService,
  });
  addRoute('tls11.example.com', {
    edgeId: 'edg_tls11',
    allowed: true,
    mode: 'terminate',
    certificate: shared,
    minVersion: '1.1',
    to: appService,
  });
  addRoute('mtls.example.com', {
    edgeId: 'edg_mtls',
    allowed: true,
    mode: 'terminate',
    certificate: shared,
    clientCas: [clientCa.pem],
    to: appService,
  });
  addRoute('echo.example.com', {
    edgeId: 'edg_echo',
    allowed: true,
    mode: 'terminate',
    certificate: shared,
    to: echo,
  });
  addRoute('offline.example.com', {
    edgeId: 'edg_offline',
    allowed: true,
    mode: 'terminate',
    certificate: shared,
  });
  addRoute('offline-pass.example.com', { edgeId: 'edg_offline_pass', allowed: true, mode: 'passthrough' });
  addRoute('denied.example.com', {
    edgeId: 'edg_denied',
    allowed: false,
    mode: 'terminate',
    certificate: shared,
    to: appService,
  });

  listener = new TlsEdgeListener({
    resolve,
    onEvent: (event) => events.push(event),
    clientHelloTimeoutMs: 500,
  });
  port = (await listener.listen(0, '127.0.0.1')).port;
}, 30_000);

beforeEach(() => {
  events.length = 0;
  connects.length = 0;
});

afterAll(async () => {
  await listener?.close(1_000);
  for (const close of closers) close();
  ssl?.cleanup();
});

describe('TLS edge listener: terminate', () => {
  it('carries curl through to a local HTTP service, verified against the edge certificate', async () => {
    const result = await curl('app.example.com', '/path?q=1', files.edgeCa as string);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('app: GET /path?q=1');
    expect(connects).toEqual(['edg_app']);
    expect(await outcomesOf('edg_app')).toEqual(['accepted']);
    const closed = await eventOf((event) => event.type === 'closed' && event.edgeId === 'edg_app');
    expect(closed).toMatchObject({ ip: '127.0.0.1', port: expect.any(Number) });
    expect(closed.bytesIn).toBeGreaterThan(200);
    expect(closed.bytesOut).toBeGreaterThan(500);
    // Events never carry key or certificate material.
    expect(JSON.stringify(events)).not.toMatch(/BEGIN|PRIVATE/);
  });

  it('routes by SNI between two edges and a wildcard, each with its own certificate', async () => {
    const [app, other, wild, deeper] = await Promise.all([
      curl('app.example.com', '/a', files.edgeCa as string),
      curl('other.example.com', '/b', files.edgeCa as string),
      curl('shop.wild.example.com', '/c', files.edgeCa as string),
      // A wildcard covers one label only: no edge, refused with unrecognized_name.
      curl('x.shop.wild.example.com', '/d', files.edgeCa as string),
    ]);
    expect(app?.stdout).toBe('app: GET /a');
    expect(other?.stdout).toBe('other: GET /b');
    expect(wild?.stdout).toBe('wild: GET /c');
    expect(deeper?.code).not.toBe(0);
    expect(deeper?.stderr).toMatch(/unrecognized name/i);
    expect(connects.sort()).toEqual(['edg_app', 'edg_other', 'edg_wild']);
  });

  it('closes a connection with an unknown SNI or none, after an unrecognized_name alert', async () => {
    const unknown = await curl('nobody.example.com', '/', files.edgeCa as string);
    expect(unknown.code).toBe(35);
    expect(unknown.stderr).toMatch(/unrecognized name/i);
    const none = await sClient(undefined);
    expect(none.code).not.toBe(0);
    expect(none.stdout).not.toContain('app:');
    expect(none.stderr).toMatch(/unrecognized name/i);
    const refused = events.filter((event) => event.type === 'no_edge');
    expect(refused.map((event) => event.serverName)).toEqual(['nobody.example.com', undefined]);
    const ports = refused.map((event) => event.port);
    const closed = await eventsOf((event) => event.type === 'closed' && ports.includes(event.port), 2);
    // Nothing but the 7-byte alert went back: no ServerHello, no certificate.
    expect(closed.map((event) => event.bytesOut)).toEqual([7, 7]);
    expect(connects).toEqual([]);
  });

  it('min_version 1.3 refuses openssl -tls1_2 and accepts -tls1_3', async () => {
    const old = await sClient('tls13.example.com', ['-tls1_2']);
    expect(old.code).not.toBe(0);
    expect(old.stderr).toMatch(/protocol version/);
    expect(old.stdout).not.toContain('app:');
    const current = await sClient('tls13.example.com', ['-tls1_3']);
    expect(current.stdout).toContain('Protocol  : TLSv1.3');
    expect(current.stdout).toContain('app: GET /via-openssl');
    expect(await outcomesOf('edg_tls13')).toEqual(['handshake_failed', 'accepted']);
    expect(connects).toEqual(['edg_tls13']);
  });

  it('the default minimum (1.2) refuses TLS 1.1; min_version 1.1 accepts it', async () => {
    const legacy = ['-tls1_1', '-cipher', 'DEFAULT:@SECLEVEL=0'];
    const refused = await sClient('app.example.com', legacy);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/protocol version/);
    const accepted = await sClient('tls11.example.com', legacy);
    expect(accepted.stdout).toContain('Protocol  : TLSv1.1');
    expect(accepted.stdout).toContain('app: GET /via-openssl');
    expect(connects).toEqual(['edg_tls11']);
  });

  it('carries a ClientHello that spans several TLS records', async () => {
    const socket = await tlsClient({
      servername: 'echo.example.com',
      ca: edgeCa.pem,
      // A 2 KiB ALPN list in 512-byte records: the ClientHello needs five of them.
      ALPNProtocols: Array.from({ length: 20 }, (_, index) => `p${index}-${'x'.repeat(100)}`),
      maxSendFragment: 512,
    });
    expect(socket.authorized).toBe(true);
    expect((await roundTrip(socket, Buffer.from('fragmented hello'))).toString()).toBe('fragmented hello');
  });
});

describe('TLS edge listener: mutual TLS', () => {
  it('refuses a client without a certificate', async () => {
    const result = await sClient('mtls.example.com');
    expect(result.code).not.toBe(0);
    expect(result.stdout).not.toContain('app:');
    expect(result.stderr).toMatch(/certificate required/);
    expect(await outcomesOf('edg_mtls')).toEqual(['handshake_failed']);
    expect(connects).toEqual([]);
  });

  it('accepts a certificate from the right CA, over TLS 1.3 and TLS 1.2 (curl and openssl)', async () => {
    const viaOpenssl = await sClient('mtls.example.com', [
      '-cert',
      files.clientCert as string,
      '-key',
      files.clientKey as string,
      '-tls1_2',
    ]);
    expect(viaOpenssl.stdout).toContain('Protocol  : TLSv1.2');
    expect(viaOpenssl.stdout).toContain('app: GET /via-openssl');
    const viaCurl = await curl('mtls.example.com', '/mtls', files.edgeCa as string, [
      '--cert',
      files.clientCert as string,
      '--key',
      files.clientKey as string,
    ]);
    expect(viaCurl.stdout).toBe('app: GET /mtls');
    expect(connects).toEqual(['edg_mtls', 'edg_mtls']);
  });

  it('refuses certificates from another CA (one with the same CA name, too) before any byte reaches the agent', async () => {
    for (const [cert, key] of [
      [files.strangerCert, files.strangerKey],
      [files.impostorCert, files.impostorKey],
    ] as const) {
      const result = await curl('mtls.example.com', '/mtls', files.edgeCa as string, [
        '--cert',
        cert as string,
        '--key',
        key as string,
      ]);
      expect(result.code).not.toBe(0);
      expect(result.stdout).toBe('');
    }
    await outcomesOf('edg_mtls');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const failures = events.filter((event) => event.type === 'handshake_failed');
    expect(failures.map((event) => event.reason)).toEqual([
      'client certificate rejected: UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      expect.stringMatching(
        /^client certificate rejected: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_SIGNATURE_FAILURE)$/,
      ),
    ]);
    expect(connects).toEqual([]);
  });
  it('resumes TLS sessions on a mutual TLS edge (TLS 1.2 and 1.3), still carried to the agent', async () => {
    const clientAuth = {
      servername: 'mtls.example.com',
      ca: edgeCa.pem,
      cert: readFileSync(files.clientCert as string, 'utf8'),
      key: readFileSync(files.clientKey as string, 'utf8'),
    };
    for (const maxVersion of ['TLSv1.2', 'TLSv1.3'] as const) {
      const first = await tlsClient({ ...clientAuth, maxVersion });
      await roundTrip(first, Buffer.from('GET /first HTTP/1.0\r\n\r\n'));
      const session = sessions.get(first);
      expect(session, maxVersion).toBeDefined();
      const again = await tlsClient({ ...clientAuth, maxVersion, session });
      expect(again.isSessionReused(), maxVersion).toBe(true);
      const answer = await roundTrip(again, Buffer.from('GET /resumed HTTP/1.0\r\n\r\n'));
      expect(answer.toString()).toContain('app: GET /resumed');
    }
    expect(connects).toEqual(['edg_mtls', 'edg_mtls', 'edg_mtls', 'edg_mtls']);
  });
});

describe('TLS edge listener: passthrough', () => {
  it('passes TLS untouched to the upstream: curl verifies the upstream certificate, not an edge one', async () => {
    const result = await curl('pass.example.com', '/through', files.upstreamCa as string);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('upstream TLS: pass.example.com TLSv1.3 /through');
    // The edge certificate authority cannot verify it: the edge is not the TLS server.
    const withEdgeCa = await curl('pass.example.com', '/through', files.edgeCa as string);
    expect(withEdgeCa.code).toBe(60);
    expect(connects).toEqual(['edg_pass', 'edg_pass']);
    expect(await outcomesOf('edg_pass')).toEqual(['accepted', 'accepted']);
  });

  it('echoes a 1 MiB upload byte-exact, with half-close both ways (terminate and passthrough)', async () => {
    const payload = randomBytes(1024 * 1024);
    for (const [servername, ca] of [
      ['echo.example.com', edgeCa.pem],
      ['echo-pass.example.com', upstreamCa.pem],
    ] as const) {
      const socket = await tlsClient({ servername, ca, allowHalfOpen: true });
      const echoed = await roundTrip(socket, payload);
      expect(echoed.length, servername).toBe(payload.length);
      expect(sha256(echoed), servername).toBe(sha256(payload));
      socket.destroy();
    }
    const closed = await eventOf((event) => event.type === 'closed' && event.edgeId === 'edg_echo_pass');
    expect(closed.bytesIn).toBeGreaterThan(1024 * 1024);
    expect(closed.bytesOut).toBeGreaterThan(1024 * 1024);
  });
});

describe('TLS edge listener: refusals', () => {
  it('an IP restriction closes the connection before any handshake', async () => {
    const result = await sClient('denied.example.com');
    expect(result.code).not.toBe(0);
    expect(result.stdout).toContain('no peer certificate available');
    expect(await outcomesOf('edg_denied')).toEqual(['ip_denied']);
    const closed = await eventOf((event) => event.type === 'closed' && event.edgeId === 'edg_denied');
    expect(closed.bytesOut).toBe(0);
    expect(connects).toEqual([]);
  });

  it('no online session: closed cleanly, after the handshake (terminate) or before it (passthrough)', async () => {
    const terminate = await curl('offline.example.com', '/', files.edgeCa as string, ['-v']);
    // The handshake completed, then the TLS stream ended without a response.
    expect(terminate.stderr).toContain('SSL connection using');
    expect(terminate.code).toBe(52);
    const passthrough = await curl('offline-pass.example.com', '/', files.edgeCa as string);
    expect(passthrough.code).toBe(35);
    expect(connects).toEqual(['edg_offline', 'edg_offline_pass']);
    expect(await outcomesOf('edg_offline')).toEqual(['no_session']);
    expect(await outcomesOf('edg_offline_pass')).toEqual(['no_session']);
    expect(events.find((event) => event.type === 'no_session')?.reason).toBe(
      'no online session for this edge',
    );
  });

  it('closes non-TLS clients and clients that send no ClientHello in time', async () => {
    const http = await run('curl', ['-sS', '--max-time', '5', `http://127.0.0.1:${port}/`]);
    expect(http.code).toBe(52);
    const silent = net.connect({ host: '127.0.0.1', port });
    const started = Date.now();
    await once(silent, 'close');
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    const failures = events.filter((event) => event.type === 'handshake_failed');
    expect(failures.map((event) => event.reason)).toEqual([
      expect.stringMatching(/^not a TLS ClientHello/),
      expect.stringMatching(/no complete ClientHello within 500 ms/),
    ]);
  });
});

describe('TLS edge listener: secure contexts and close', () => {
  it('builds a secure context once per distinct certificate, not per handshake', async () => {
    const warm = await tlsClient({ servername: 'echo.example.com', ca: edgeCa.pem });
    warm.destroy();
    const spy = vi.spyOn(tls, 'createSecureContext');
    // Server-side contexts only (the edge's, with a key), not those of the test's own clients.
    const build = () => spy.mock.calls.filter(([options]) => options?.key !== undefined);
    try {
      for (let index = 0; index < 3; index++) {
        const socket = await tlsClient({ servername: 'echo.example.com', ca: edgeCa.pem });
        expect((await roundTrip(socket, Buffer.from(`n${index}`))).toString()).toBe(`n${index}`);
      }
      // echo.example.com was served before: its context is cached.
      expect(build()).toHaveLength(0);
      // New certificate content for the same edge: a new context, then cached again.
      const rotated = leaf(['echo.example.com'], edgeCa);
      const route = routes.get('echo.example.com') as TlsCarriedRoute;
      routes.set('echo.example.com', { ...route, certificate: { cert: rotated.pem, key: rotated.key.pem } });
      for (let index = 0; index < 2; index++) {
        const socket = await tlsClient({ servername: 'echo.example.com', ca: edgeCa.pem });
        expect(socket.getPeerX509Certificate()?.fingerprint256).toBe(
          new X509Certificate(rotated.pem).fingerprint256,
        );
        socket.destroy();
      }
      expect(build()).toHaveLength(1);
      routes.set('echo.example.com', route);
    } finally {
      spy.mockRestore();
    }
  });

  it('graceful close: stops accepting, lets an open connection finish, destroys stragglers at the deadline', async () => {
    const echo = await echoService();
    const local = new TlsEdgeListener({
      resolve: () => ({ ...routes.get('echo.example.com')!, connect: () => plainConnect(echo) }),
    });
    const localPort = (await local.listen(0, '127.0.0.1')).port;
    const open = await tlsClient({
      listenerPort: localPort,
      servername: 'echo.example.com',
      ca: edgeCa.pem,
      allowHalfOpen: true,
    });
    open.write('before close;');
    await once(open, 'data');

    let closed = false;
    const closing = local.close(5_000).then(() => {
      closed = true;
    });
    // No new connections...
    const refused = net.connect({ host: '127.0.0.1', port: localPort });
    const [error] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNREFUSED');
    // ...while the open one keeps working until it ends.
    expect((await roundTrip(open, Buffer.from('after close'))).toString()).toBe('after close');
    const ended = Date.now();
    await closing;
    expect(closed).toBe(true);
    expect(Date.now() - ended).toBeLessThan(1_000);
    expect(local.connectionCount).toBe(0);

    // A connection that does not end is destroyed at the deadline.
    const second = new TlsEdgeListener({
      resolve: () => ({ ...routes.get('echo.example.com')!, connect: () => plainConnect(echo) }),
    });
    const secondPort = (await second.listen(0, '127.0.0.1')).port;
    const straggler = await tlsClient({
      listenerPort: secondPort,
      servername: 'echo.example.com',
      ca: edgeCa.pem,
    });
    straggler.on('error', () => {});
    const started = Date.now();
    await second.close(300);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1_500);
    if (!straggler.closed) await once(straggler, 'close');
    expect(second.connectionCount).toBe(0);
  });
});

describe('TLS edge listener: no leaks', () => {
  it('leaves no client connection and no agent stream open once the clients are gone', async () => {
    expect(upstreams.length).toBeGreaterThanOrEqual(15);
    expect(
      await eventually(
        async () => listener.connectionCount,
        (count) => count === 0,
      ),
    ).toBe(0);
    expect(upstreams.filter((socket) => !socket.destroyed)).toEqual([]);
  });
});
