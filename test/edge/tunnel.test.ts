import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import net from 'node:net';
import { pipeline } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { parseForwardTarget } from '../../src/agent/forward-target.js';
import type { AgentSession } from '../../src/edge/tunnel/agent-session.js';
import { SessionRefused, TunnelEndpoint } from '../../src/edge/tunnel/tunnel-endpoint.js';
import { nextSessionOn } from '../support/edge.js';
import { waitFor } from '../support/eventually.js';
import { OpensslWorkspace } from '../support/openssl.js';

/**
 * The tunnel transport on real sockets: an agent dials the edge's tunnel endpoint over TLS, the
 * edge opens one HTTP/2 stream per carried connection, and a real client (curl) talks through a
 * plain TCP listener of the edge to a local HTTP service behind the agent.
 */
const run = promisify(execFile);
const GOOD_TOKEN = 'ewt_good_token_for_the_tunnel_test_0123456789';

let ssl: OpensslWorkspace;
let edgeCert: { cert: string; key: string };
let service: HttpServer;
let servicePort: number;
let endpoint: TunnelEndpoint;
let tunnelPort: number;
let front: net.Server;
let frontPort: number;
const agents: Agent[] = [];
let sessionCounter = 0;

beforeAll(async () => {
  ssl = new OpensslWorkspace();
  edgeCert = ssl.selfSigned('edge.test');

  service = createHttpServer((request, response) => {
    if (request.url === '/echo') {
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      request.pipe(response);
      return;
    }
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end(`hello from the service: ${request.method} ${request.url}`);
  });
  service.listen(0, '127.0.0.1');
  await once(service, 'listening');
  servicePort = (service.address() as net.AddressInfo).port;

  endpoint = new TunnelEndpoint({
    tls: edgeCert,
    async authenticate(hello) {
      if (hello.authtoken !== GOOD_TOKEN) throw new SessionRefused('the authtoken is unknown or was revoked');
      return { id: `ts_test${++sessionCounter}`, credentialId: 'cr_test' };
    },
  });
  tunnelPort = (await endpoint.listen(0)).port;

  // What a TCP edge does with each public connection: carry it over a stream of an online session.
  front = net.createServer((client) => {
    const session = endpoint.sessions()[0];
    if (!session) {
      client.destroy();
      return;
    }
    const source = { ip: client.remoteAddress ?? 'unknown', port: client.remotePort ?? 0 };
    session.openStream(source).then(
      (stream) => pipeline(client, stream, client, () => client.destroy()),
      () => client.destroy(),
    );
  });
  front.listen(0, '127.0.0.1');
  await once(front, 'listening');
  frontPort = (front.address() as net.AddressInfo).port;
});

afterEach(() => {
  for (const agent of agents.splice(0)) agent.stop();
});

afterAll(async () => {
  front?.close();
  service?.close();
  await endpoint?.close();
  ssl?.cleanup();
});

function startAgent(token = GOOD_TOKEN, forward = `http://127.0.0.1:${servicePort}`): Agent {
  const agent = new Agent({
    edgeAddr: `127.0.0.1:${tunnelPort}`,
    authtoken: token,
    labels: { app: 'web', env: 'test' },
    forward: parseForwardTarget(forward),
    metadata: '{"team":"edge"}',
    agentVersion: '0.1.0',
    ca: edgeCert.cert,
    serverName: 'edge.test',
  });
  agents.push(agent);
  agent.start();
  return agent;
}

function sessionOf(agent: Agent): Promise<AgentSession> {
  return nextSessionOn(endpoint, agent);
}

describe('tunnel transport (agent ↔ edge over HTTP/2 on the agent’s TLS connection)', () => {
  it('opens a session that records who the agent is, never its token', async () => {
    const before = Date.now();
    const session = await sessionOf(startAgent());
    expect(session.info).toEqual({
      id: session.id,
      credentialId: 'cr_test',
      transport: 'svc/2',
      agentVersion: '0.1.0',
      os: process.platform,
      metadata: '{"team":"edge"}',
      labels: { app: 'web', env: 'test' },
      ip: '127.0.0.1',
      startedAt: expect.any(Date),
    });
    expect(session.info.startedAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(JSON.stringify(session.info)).not.toContain(GOOD_TOKEN);
  });

  it("tells the agent each public client's address", async () => {
    const agent = startAgent();
    await sessionOf(agent);
    const carried = once(agent, 'connection');
    const client = net.connect({ host: '127.0.0.1', port: frontPort });
    await once(client, 'connect');
    const [source, outcome] = (await carried) as [{ ip: string; port: number }, string];
    expect(outcome).toBe('carried');
    expect(source).toEqual({ ip: '127.0.0.1', port: client.localPort });
    client.destroy();
  });

  it('carries curl through the edge to the service behind the agent', async () => {
    await sessionOf(startAgent());
    const { stdout } = await run('curl', [
      '-sS',
      '--max-time',
      '10',
      `http://127.0.0.1:${frontPort}/path?q=1`,
    ]);
    expect(stdout).toBe('hello from the service: GET /path?q=1');
  });

  it('multiplexes many connections at once, each byte intact both ways', async () => {
    await sessionOf(startAgent());
    const payloads = Array.from({ length: 16 }, (_, index) => Buffer.alloc(256 * 1024 + index, index));
    const answers = await Promise.all(
      payloads.map(async (payload) => {
        const response = await fetch(`http://127.0.0.1:${frontPort}/echo`, { method: 'POST', body: payload });
        return Buffer.from(await response.arrayBuffer());
      }),
    );
    answers.forEach((answer, index) => {
      expect(answer.equals(payloads[index] as Buffer), `connection ${index}`).toBe(true);
    });
  });

  it('refuses a bad token with a reason the agent hears, and keeps no session', async () => {
    const agent = startAgent('ewt_not_a_real_token');
    const [reason] = (await once(agent, 'refused')) as [string];
    expect(reason).toBe('the authtoken is unknown or was revoked');
    expect(endpoint.sessions()).toHaveLength(0);
  });

  it('an agent whose session ends reconnects under a new session id', async () => {
    const agent = startAgent();
    const first = await sessionOf(agent);
    const closed = once(first, 'closed');
    first.close('restart requested');
    await closed;
    const second = await sessionOf(agent);
    expect(second.id).not.toBe(first.id);
    expect(endpoint.sessions().map((session) => session.id)).toEqual([second.id]);
  });

  it('a stop closes the session at the edge', async () => {
    const agent = startAgent();
    const session = await sessionOf(agent);
    const closed = once(session, 'closed');
    agent.stop();
    await closed;
    expect(endpoint.session(session.id)).toBeUndefined();
  });

  it('a target the agent cannot reach fails that stream alone (502), not the session', async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const agent = startAgent(GOOD_TOKEN, `tcp://127.0.0.1:${closedPort}`);
    const session = await sessionOf(agent);
    const reported = once(agent, 'connection');
    await expect(session.openStream({ ip: '192.0.2.7', port: 40000 })).rejects.toThrow(
      /could not reach its target \(HTTP 502\)/,
    );
    expect(await reported).toEqual([{ ip: '192.0.2.7', port: 40000 }, 'unreachable']);
    expect(session.closed).toBe(false);
  });
});

/**
 * A TCP proxy between agents and the edge that can freeze the connections it carries: nothing more
 * goes either way, and nothing is closed (an edge that froze, a path that silently died).
 * Connections opened after a freeze are carried normally.
 */
async function freezingProxy(targetPort: number) {
  const carried = new Set<net.Socket>();
  const frozen = new Set<net.Socket>();
  const proxy = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      carried.add(socket);
      socket.on('error', () => {}); // one side's failure closes the other below; nothing to report
      socket.once('close', () => carried.delete(socket));
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  return {
    port: (proxy.address() as net.AddressInfo).port,
    /** Stops every connection carried now, both ways, without closing any. */
    freeze() {
      for (const socket of carried) {
        socket.unpipe();
        socket.pause();
        frozen.add(socket);
      }
    },
    close() {
      for (const socket of [...carried, ...frozen]) socket.destroy();
      proxy.close();
    },
  };
}

describe('an agent and several edges behind one name', () => {
  it('dials every address the name resolves to until it holds a session on each edge', async () => {
    const edgeEndpoint = (edgeId: string) =>
      new TunnelEndpoint({
        tls: edgeCert,
        edgeId,
        // Neither edge advertises an address of its own: only the name leads to them.
        liveEdges: () => [
          { id: 'edge-a', tunnel_addr: null },
          { id: 'edge-b', tunnel_addr: null },
        ],
        async authenticate() {
          return { id: `ts_${edgeId.replace('-', '')}${++sessionCounter}`, credentialId: 'cr_test' };
        },
      });
    const first = edgeEndpoint('edge-a');
    const second = edgeEndpoint('edge-b');
    const { port } = await first.listen(0, '127.0.0.1');
    await second.listen(port, '127.0.0.2');
    const resolved: string[] = [];
    const agent = new Agent({
      edgeAddr: `edges.test:${port}`,
      authtoken: GOOD_TOKEN,
      labels: { app: 'web', env: 'several' },
      forward: parseForwardTarget(`http://127.0.0.1:${servicePort}`),
      agentVersion: '0.1.0',
      ca: edgeCert.cert,
      serverName: 'edge.test',
      resolveHost: async (host) => {
        resolved.push(host);
        return ['127.0.0.1', '127.0.0.2'];
      },
    });
    agents.push(agent);
    try {
      agent.start();
      await waitFor(() => first.sessions().length === 1 && second.sessions().length === 1, {
        what: 'a session on each edge',
        timeoutMs: 10_000,
      });
      expect(agent.sessionIds).toHaveLength(2);
      expect(resolved.every((host) => host === 'edges.test')).toBe(true);
    } finally {
      agent.stop();
      await first.close();
      await second.close();
    }
  });
});

describe('an agent and edges that disagree or vanish', () => {
  const edgeAt = (
    edgeId: string,
    edges: () => Array<{ id: string; tunnel_addr: string | null }>,
    refuse = false,
  ) =>
    new TunnelEndpoint({
      tls: edgeCert,
      edgeId,
      liveEdges: edges,
      async authenticate() {
        if (refuse) throw new SessionRefused('the authtoken is unknown or was revoked');
        return { id: `ts_${edgeId.replace('-', '')}${++sessionCounter}`, credentialId: 'cr_test' };
      },
    });
  const agentFor = (port: number) => {
    const agent = new Agent({
      edgeAddr: `127.0.0.1:${port}`,
      authtoken: GOOD_TOKEN,
      labels: { app: 'web', env: 'disagree' },
      forward: parseForwardTarget(`http://127.0.0.1:${servicePort}`),
      agentVersion: '0.1.0',
      ca: edgeCert.cert,
      serverName: 'edge.test',
    });
    agents.push(agent);
    return agent;
  };

  it('one edge refusing while another carries a session leaves that edge alone, not the agent', async () => {
    let refusingPort = 0;
    const edges = () => [
      { id: 'edge-a', tunnel_addr: null },
      { id: 'edge-b', tunnel_addr: `127.0.0.1:${refusingPort}` },
    ];
    const granting = edgeAt('edge-a', edges);
    const refusing = edgeAt('edge-b', edges, true);
    const { port } = await granting.listen(0, '127.0.0.1');
    refusingPort = (await refusing.listen(0, '127.0.0.1')).port;
    const agent = agentFor(port);
    try {
      const refusedBy = once(agent, 'edgeRefused');
      agent.start();
      const [reason] = (await refusedBy) as [string];
      expect(reason).toBe('the authtoken is unknown or was revoked');
      expect(granting.sessions()).toHaveLength(1);
      expect(agent.sessionIds).toEqual([granting.sessions()[0]?.id]);
      const ended = await Promise.race([
        agent.done,
        new Promise((resolve) => setTimeout(() => resolve('running'), 500)),
      ]);
      expect(ended).toBe('running');
    } finally {
      agent.stop();
      await granting.close();
      await refusing.close();
    }
  });

  it('an edge address that leads nowhere does not keep the agent from the shared address', async () => {
    const deadPort = await new Promise<number>((resolve) => {
      const probe = net.createServer();
      probe.listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    // The edge lists a second edge at an address nothing listens on any more (a pod that moved).
    const shared = edgeAt('edge-a', () => [
      { id: 'edge-a', tunnel_addr: null },
      { id: 'edge-gone', tunnel_addr: `127.0.0.1:${deadPort}` },
    ]);
    const { port } = await shared.listen(0, '127.0.0.1');
    const agent = agentFor(port);
    try {
      agent.start();
      await waitFor(() => shared.sessions().length === 1, { what: 'the first session', timeoutMs: 5_000 });
      const first = shared.sessions()[0];
      first?.close('the edge restarted');
      // Holding nothing, the agent goes back to the shared address, not to the dead one.
      await waitFor(() => shared.sessions().some((session) => session.id !== first?.id), {
        what: 'a new session through the shared address',
        timeoutMs: 10_000,
      });
    } finally {
      agent.stop();
      await shared.close();
    }
  });
});

describe('liveness seen from the agent', () => {
  it('an agent whose edge stopped answering drops the connection and reconnects', async () => {
    const proxy = await freezingProxy(tunnelPort);
    const agent = new Agent({
      edgeAddr: `127.0.0.1:${proxy.port}`,
      authtoken: GOOD_TOKEN,
      labels: { app: 'web', env: 'liveness' },
      forward: parseForwardTarget(`http://127.0.0.1:${servicePort}`),
      agentVersion: '0.1.0',
      ca: edgeCert.cert,
      serverName: 'edge.test',
      liveness: { intervalMs: 300, timeoutMs: 900 },
    });
    agents.push(agent);
    try {
      agent.start();
      const [first] = (await once(agent, 'session')) as [string];
      // Answering pings, the session outlives several liveness intervals.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(agent.sessionId).toBe(first);

      const frozenAt = Date.now();
      proxy.freeze();
      const [reason] = (await once(agent, 'disconnected')) as [string];
      expect(reason).toMatch(/^the edge answered nothing for \d+(\.\d)? s$/);
      expect(Date.now() - frozenAt).toBeLessThan(1_200 + 2_000); // the limit, and a loaded machine's slack
      const [second] = (await once(agent, 'session')) as [string];
      expect(second).not.toBe(first);
    } finally {
      proxy.close();
    }
  });

  it('an edge that accepts the connection and then says nothing does not hold the agent for ever', async () => {
    // A frozen edge process: the kernel completes the TCP handshake, nobody answers TLS.
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const agent = new Agent({
      edgeAddr: `127.0.0.1:${(silent.address() as net.AddressInfo).port}`,
      authtoken: GOOD_TOKEN,
      labels: { app: 'web', env: 'silent' },
      forward: parseForwardTarget(`http://127.0.0.1:${servicePort}`),
      agentVersion: '0.1.0',
      ca: edgeCert.cert,
      serverName: 'edge.test',
      verdictTimeoutMs: 800,
    });
    agents.push(agent);
    try {
      const dialedAt = Date.now();
      agent.start();
      const [reason] = (await once(agent, 'disconnected')) as [string];
      expect(reason).toBe('the edge gave no verdict within 0.8 s');
      expect(Date.now() - dialedAt).toBeLessThan(800 + 2_000);
    } finally {
      agent.stop();
      silent.close();
    }
  });
});
