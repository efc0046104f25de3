import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { Writable } from 'node:stream';
import tls from 'node:tls';
import { promisify } from 'node:util';
import pino from 'pino';
import ssh2 from 'ssh2';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { TUNNEL_ALPN } from '../../src/schemas/tunnel-protocol.js';
import { killAll } from '../support/cli-process.js';
import { startTestAgent, startTestEdge, type TestEdge } from '../support/edge.js';
import { waitFor } from '../support/eventually.js';
import { type KeyFiles, OpenSshWorkspace } from '../support/openssh.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { clientHelloFor } from '../support/slow-clients.js';

/**
 * Hostile clients of the ports agents dial, against a real edge fed by a real server: raw
 * `node:net`/`node:tls` sockets that connect and never finish the TLS handshake, the hello or the
 * SSH key exchange, and many of them from one address. The edge must close them in time and keep
 * the endpoints open to real agents (our `Agent`, OpenSSH) meanwhile.
 *
 * All of 127.0.0.0/8 reaches the loopback interface, so a hostile socket bound to 127.0.0.2 is
 * another source address than the agents (127.0.0.1).
 */
const run = promisify(execFile);
/** The quick edge's handshake timeout; the hello gets as long again. */
const HANDSHAKE_MS = 1_000;
/** The quick edge's SSH authentication timeout. */
const SSH_AUTH_MS = 2_000;
/** Scheduling on a loaded 2-core machine: how late a timeout may fire and still count as on time. */
const SLACK_MS = 1_500;
/**
 * The edge's timer starts when it accepts, a little before the test's clock does (both share one
 * event loop): a close this late is the timeout's, not an immediate one.
 */
const EARLIEST_MS = HANDSHAKE_MS * 0.75;
/** The capped edge's per-source limit; the hostile clients open half as many again. */
const CAP = 8;
const LABELS = { app: 'abuse' };

interface LogLine {
  level: number;
  msg: string;
  endpoint?: string;
  ip?: string;
  kind?: string;
  reason?: string;
}

let t: TestServer;
/** Short timeouts (1 s handshake, 2 s SSH authentication), the default per-source limit. */
let quick: TestEdge;
/** The default timeouts, a per-source limit of `CAP`. */
let capped: TestEdge;
let ssh: OpenSshWorkspace;
let sshKey: KeyFiles;
let authtoken: string;
const logs: LogLine[] = [];
const sockets: net.Socket[] = [];
const agents: Agent[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  t = await startTestServer();
  // Every line the quick edge logs, down to debug.
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logs.push(JSON.parse(line));
      done();
    },
  });
  quick = await startTestEdge(t, {
    ssh: true,
    logger: pino({ level: 'debug' }, sink),
    unauthenticatedLimits: { handshakeTimeoutMs: HANDSHAKE_MS, sshAuthTimeoutMs: SSH_AUTH_MS },
  });
  capped = await startTestEdge(t, { ssh: true, unauthenticatedLimits: { maxPerSource: CAP } });
  const credential = await t.api('POST', '/credentials', {});
  expect(credential.status, credential.text).toBe(201);
  authtoken = String(credential.body.token);
  ssh = new OpenSshWorkspace();
  sshKey = ssh.keygen('ed25519');
  const sshCredential = await t.api('POST', '/ssh_credentials', { public_key: sshKey.line });
  expect(sshCredential.status, sshCredential.text).toBe(201);
});

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const agent of agents.splice(0)) agent.stop();
  await killAll(children);
});

afterAll(async () => {
  await quick?.stop();
  await capped?.stop();
  await t?.stop();
  ssh?.remove();
});

/** A TCP connection to `port` from `from`, connected; it sends nothing unless told to. */
async function connectFrom(port: number, from = '127.0.0.2'): Promise<net.Socket> {
  const socket = net.connect({ host: '127.0.0.1', port, localAddress: from });
  sockets.push(socket);
  // A reset by the edge is a close too here.
  socket.on('error', () => {});
  // Read (and drop) what the edge sends: a paused socket would never see the edge's close.
  socket.resume();
  await once(socket, 'connect');
  return socket;
}

/** How long after `since` (ms, `performance.now()`) the socket closed, or Infinity if still open after `waitMs`. */
function closedAfter(socket: net.Socket, since: number, waitMs: number): Promise<number> {
  const elapsed = () => performance.now() - since;
  if (socket.destroyed) return Promise.resolve(elapsed());
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(Number.POSITIVE_INFINITY), waitMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(elapsed());
    });
  });
}

/** Opens `count` connections from `from` one after the other; resolves once the edge has closed the ones it will close at once. */
async function flood(port: number, from: string, count: number) {
  const opened: net.Socket[] = [];
  for (let index = 0; index < count; index++) opened.push(await connectFrom(port, from));
  const open = () => opened.filter((socket) => !socket.destroyed);
  // Well below the capped edge's 10 s handshake timeout: only the limit closes anything this soon.
  await waitFor(() => open().length <= CAP, {
    what: `the edge to close what is over ${CAP}`,
    timeoutMs: 3_000,
    detail: () => `${open().length} of ${count} still open`,
    // Not a failure here: the caller's assertions say what stayed open.
  }).catch(() => {});
  // A moment more, so that one closed too many would show.
  await new Promise((resolve) => setTimeout(resolve, 200));
  return { opened, open };
}

function debugLinesFor(ip: string, endpoint: string, kind: string): LogLine[] {
  return logs.filter(
    (line) => line.level === 20 && line.ip === ip && line.endpoint === endpoint && line.kind === kind,
  );
}

/**
 * An agent with a session on `edge` alone: both edges of this file are live edges of one server, and
 * an agent after more than one dials the shared address again (an unauthenticated connection from
 * its address until the edge says it is held there), which would take a slot of the limit.
 */
async function agentSessionOn(edge: TestEdge): Promise<string> {
  const agent = startTestAgent(edge, {
    authtoken,
    labels: LABELS,
    forward: 'http://127.0.0.1:9',
    haConnections: 1,
  });
  agents.push(agent);
  const [id] = (await once(agent, 'session')) as [string];
  return id;
}

interface SshRun {
  stdout: () => string;
  exited: Promise<number | null>;
}

/** `/usr/bin/ssh` with the registered key against an edge's SSH endpoint, optionally from another address. */
function runSsh(edge: TestEdge, args: string[], bindAddress?: string): SshRun {
  const child = spawn(
    '/usr/bin/ssh',
    [
      ...['-F', '/dev/null', '-p', String(edge.edge.sshPort), '-i', sshKey.path],
      ...['-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'BatchMode=yes'],
      ...['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'ConnectTimeout=5'],
      ...(bindAddress ? ['-o', `BindAddress=${bindAddress}`] : []),
      'edge@127.0.0.1',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  let stdout = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.resume();
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { stdout: () => stdout, exited };
}

/** An OpenSSH tunnel session online on `edge` (the credential may still be on its way to the edge: `help` first). */
async function sshSessionOn(edge: TestEdge, bindAddress?: string): Promise<SshRun> {
  await waitFor(async () => (await runSsh(edge, ['help'], bindAddress).exited) === 0, {
    what: 'the SSH credential to reach the edge',
  });
  const tunnel = runSsh(edge, ['-R', '0:127.0.0.1:9', 'tunnel', '--label', 'app=abuse'], bindAddress);
  await waitFor(() => tunnel.stdout().includes('is online'), {
    what: 'the OpenSSH session',
    timeoutMs: 10_000,
    detail: () => tunnel.stdout(),
  });
  return tunnel;
}

describe('the tunnel endpoint against clients that never finish', () => {
  it('closes a TCP connection that sends nothing once the handshake timeout passes, and logs why at debug', async () => {
    const socket = await connectFrom(quick.edge.tunnelPort);
    const elapsed = await closedAfter(socket, performance.now(), HANDSHAKE_MS + SLACK_MS);
    expect(elapsed).toBeGreaterThanOrEqual(EARLIEST_MS);
    expect(elapsed).toBeLessThan(HANDSHAKE_MS + SLACK_MS);
    await waitFor(() => debugLinesFor('127.0.0.2', 'tunnel', 'handshake_timeout').length > 0, {
      what: 'the debug line of the handshake timeout',
    });
    expect(debugLinesFor('127.0.0.2', 'tunnel', 'handshake_timeout')[0]).toMatchObject({
      msg: 'connection closed before it authenticated',
      reason: `the TLS handshake did not finish within ${HANDSHAKE_MS} ms`,
    });
  });

  it('closes a connection whose ClientHello stops halfway', async () => {
    const hello = await clientHelloFor('localhost');
    const socket = await connectFrom(quick.edge.tunnelPort);
    socket.write(hello.subarray(0, Math.floor(hello.length / 2)));
    const elapsed = await closedAfter(socket, performance.now(), HANDSHAKE_MS + SLACK_MS);
    expect(elapsed).toBeLessThan(HANDSHAKE_MS + SLACK_MS);
  });

  it('closes a connection that finishes TLS but never says hello, once the hello timeout passes', async () => {
    const client = tls.connect({
      socket: await connectFrom(quick.edge.tunnelPort),
      ALPNProtocols: [TUNNEL_ALPN],
      servername: 'localhost',
      ca: quick.tunnelCa,
    });
    sockets.push(client);
    client.on('error', () => {});
    client.resume();
    await once(client, 'secureConnect');
    // Our side speaks no HTTP/2: the edge's hello request is never answered.
    const elapsed = await closedAfter(client, performance.now(), HANDSHAKE_MS + SLACK_MS);
    expect(elapsed).toBeGreaterThanOrEqual(EARLIEST_MS);
    expect(elapsed).toBeLessThan(HANDSHAKE_MS + SLACK_MS);
    await waitFor(() => debugLinesFor('127.0.0.2', 'tunnel', 'auth_timeout').length > 0, {
      what: 'the debug line of the hello timeout',
    });
  });

  it('a TLS handshake that fails (not TLS at all) is closed at once and logged at debug with the reason', async () => {
    const socket = await connectFrom(quick.edge.tunnelPort);
    socket.write('GET / HTTP/1.1\r\nHost: edge\r\n\r\n');
    expect(await closedAfter(socket, performance.now(), HANDSHAKE_MS)).toBeLessThan(HANDSHAKE_MS);
    await waitFor(() => debugLinesFor('127.0.0.2', 'tunnel', 'handshake_failed').length > 0, {
      what: 'the debug line of the failed handshake',
    });
    expect(debugLinesFor('127.0.0.2', 'tunnel', 'handshake_failed')[0]?.reason).toBe(
      'TLS handshake failed: http request',
    );
  });

  it(`holds ${CAP} unauthenticated connections of one address, closes the rest at once, and still admits an agent from another`, async () => {
    const { opened, open } = await flood(capped.edge.tunnelPort, '127.0.0.2', CAP * 1.5);
    expect(open()).toHaveLength(CAP);
    expect(opened.length - open().length).toBe(CAP / 2);
    expect(await agentSessionOn(capped)).toMatch(/^ts_/);
    // The held ones were still held while the agent connected.
    expect(open()).toHaveLength(CAP);
  });

  it("an agent's session does not count against its address's limit", async () => {
    await agentSessionOn(capped);
    // From the agent's own address: all CAP slots are still free.
    const { open } = await flood(capped.edge.tunnelPort, '127.0.0.1', CAP + 1);
    expect(open()).toHaveLength(CAP);
  });

  it('turns TCP keepalive on for agent connections, so the kernel notices a vanished agent', async () => {
    await agentSessionOn(quick);
    const agentConnections = async () => {
      const { stdout } = await run('ss', [
        '-tnoH',
        'state',
        'established',
        `( sport = :${quick.edge.tunnelPort} and dst 127.0.0.1 )`,
      ]);
      return stdout.trim().split('\n').filter(Boolean);
    };
    // ss shows the keepalive timer once nothing is in flight (the retransmission timer wins before).
    let seen: string[] = [];
    await waitFor(
      async () => {
        seen = await agentConnections();
        return seen.length > 0 && seen.every((line) => /timer:\(keepalive,/.test(line));
      },
      { what: 'the keepalive timer on the edge side of the agent connection', timeoutMs: 3_000 },
    ).catch(() => {});
    expect(seen.length).toBeGreaterThan(0);
    for (const connection of seen) expect(connection).toMatch(/timer:\(keepalive,/);
  });
});

describe('the SSH endpoint against clients that never finish', () => {
  it('closes a TCP connection that sends nothing once the handshake timeout passes', async () => {
    const socket = await connectFrom(quick.edge.sshPort);
    const elapsed = await closedAfter(socket, performance.now(), HANDSHAKE_MS + SLACK_MS);
    expect(elapsed).toBeGreaterThanOrEqual(EARLIEST_MS);
    expect(elapsed).toBeLessThan(HANDSHAKE_MS + SLACK_MS);
    await waitFor(() => debugLinesFor('127.0.0.2', 'ssh', 'handshake_timeout').length > 0, {
      what: 'the debug line of the SSH handshake timeout',
    });
  });

  it('closes a client that sends only its version banner once the handshake timeout passes', async () => {
    const socket = await connectFrom(quick.edge.sshPort);
    let received = '';
    socket.setEncoding('latin1').on('data', (chunk: string) => {
      received += chunk;
    });
    socket.write('SSH-2.0-hostile_0.1\r\n');
    const elapsed = await closedAfter(socket, performance.now(), HANDSHAKE_MS + SLACK_MS);
    expect(received).toMatch(/^SSH-2\.0-edgeward/);
    expect(elapsed).toBeLessThan(HANDSHAKE_MS + SLACK_MS);
  });

  it('closes a client that finishes the key exchange but never authenticates, at the authentication timeout', async () => {
    const client = new ssh2.Client();
    const handshakeDone = once(client, 'handshake');
    const closed = once(client, 'close');
    client.on('error', () => {});
    client.connect({
      host: '127.0.0.1',
      port: quick.edge.sshPort,
      localAddress: '127.0.0.2',
      username: 'edge',
      // Never answers: the client sits between the key exchange and its first authentication request.
      authHandler: () => {},
      readyTimeout: 60_000,
    });
    try {
      await handshakeDone;
      const since = performance.now();
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, SSH_AUTH_MS + SLACK_MS))]);
      const elapsed = performance.now() - since;
      // Past the handshake timeout (which the key exchange met), cut by the authentication one.
      expect(elapsed).toBeGreaterThan(HANDSHAKE_MS);
      expect(elapsed).toBeLessThan(SSH_AUTH_MS + SLACK_MS);
      await waitFor(() => debugLinesFor('127.0.0.2', 'ssh', 'auth_timeout').length > 0, {
        what: 'the debug line of the SSH authentication timeout',
      });
    } finally {
      client.end();
    }
  });

  it(`holds ${CAP} unauthenticated connections of one address, closes the rest at once; OpenSSH still connects, and its sessions do not count`, async () => {
    // A session from 127.0.0.3 first: it must not take one of that address's slots.
    const first = await sshSessionOn(capped, '127.0.0.3');
    const { opened, open } = await flood(capped.edge.sshPort, '127.0.0.3', CAP * 1.5);
    expect(open()).toHaveLength(CAP);
    expect(opened.length - open().length).toBe(CAP / 2);
    // Another address opens a session while those are held.
    const second = await sshSessionOn(capped);
    expect(second.stdout()).toContain('is online');
    expect(open()).toHaveLength(CAP);
    expect(first.stdout()).toContain('is online');
  });
});

describe('the log under a flood of hostile clients', () => {
  it('says nothing above debug about connections that never authenticated', () => {
    const hostile = logs.filter((line) => line.ip === '127.0.0.2');
    expect(hostile.length).toBeGreaterThan(0);
    expect(hostile.filter((line) => line.level > 20)).toEqual([]);
  });
});
