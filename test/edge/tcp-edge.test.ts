import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import net from 'node:net';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { startTestAgent, startTestEdge, type TestEdge } from '../support/edge.js';
import { eventually } from '../support/eventually.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The whole data plane for TCP edges, on loopback: a server, an edge fed by it, our agent, and curl
 * through the TCP edge's reserved address to a real local HTTP service. Everything is configured
 * through the public API, as a user would.
 */
const run = promisify(execFile);

let t: TestServer;
let edge: TestEdge;
let service: HttpServer;
let servicePort: number;
const agents: Agent[] = [];

beforeAll(async () => {
  t = await startTestServer();
  edge = await startTestEdge(t);
  service = createHttpServer((request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end(
      `hello from ${request.headers['x-service'] ?? 'the service'}: ${request.method} ${request.url}`,
    );
  });
  service.listen(0, '127.0.0.1');
  await once(service, 'listening');
  servicePort = (service.address() as net.AddressInfo).port;
});

afterEach(() => {
  for (const agent of agents.splice(0)) agent.stop();
});

afterAll(async () => {
  await edge?.stop();
  service?.close();
  await t?.stop();
});

async function create(path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await t.api('POST', path, body);
  expect(response.status, `${path}: ${response.text}`).toBe(201);
  return response.body;
}

/** A credential, a backend for `labels`, a reserved address and a TCP edge on it. */
async function tcpEdgeFor(labels: Record<string, string>, acl?: string[]) {
  const credential = await create('/credentials', acl ? { acl } : {});
  const backend = await create('/backends/tunnel_group', { labels });
  const addr = await create('/reserved_addrs', { region: 'us' });
  const tcpEdge = await create('/edges/tcp', {
    hostports: [addr.addr],
    backend: { backend_id: backend.id },
  });
  const port = Number(String(addr.addr).split(':').pop());
  return { credential, backend, addr, tcpEdge, port, token: String(credential.token) };
}

async function sessionOnline(agent: Agent): Promise<string> {
  const [id] = (await once(agent, 'session')) as [string];
  return id;
}

async function curl(port: number): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run('curl', ['-sS', '--max-time', '5', `http://127.0.0.1:${port}/path?q=1`]);
    return { code: 0, stdout };
  } catch (error) {
    const failure = error as { code?: number; stdout?: string };
    return { code: failure.code ?? -1, stdout: failure.stdout ?? '' };
  }
}

describe('TCP edges carry connections through tunnels', () => {
  it('carries curl through the reserved address to the service, and lists the live session', async () => {
    const setup = await tcpEdgeFor({ app: 'web', env: 'tcp-test' });
    // The edge opens the port within a second of the API write.
    await eventually(
      async () => edge.edge.metrics.registry.getSingleMetricAsString('edgeward_edge_config_applied_total'),
      () => true,
    );
    const agent = startTestAgent(edge, {
      authtoken: setup.token,
      labels: { app: 'web', env: 'tcp-test' },
      forward: `http://127.0.0.1:${servicePort}`,
      metadata: 'rack 7',
    });
    agents.push(agent);
    const sessionId = await sessionOnline(agent);

    const answer = await eventually(
      () => curl(setup.port),
      (result) => result.code === 0,
    );
    expect(answer.stdout).toBe('hello from the service: GET /path?q=1');

    const listed = await eventually(
      () => t.api<{ tunnel_sessions: Array<Record<string, unknown>> }>('GET', '/tunnel_sessions'),
      (response) => response.body.tunnel_sessions.some((session) => session.id === sessionId),
    );
    const session = listed.body.tunnel_sessions.find((candidate) => candidate.id === sessionId);
    expect(session).toMatchObject({
      id: sessionId,
      agent_version: '0.1.0',
      credential: { id: setup.credential.id },
      ip: '127.0.0.1',
      metadata: 'rack 7',
      os: process.platform,
      region: 'us',
      transport: 'svc/2',
    });
    expect(String(session?.started_at)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // The backend's tunnel group shows the session.
    const backend = await t.api('GET', `/backends/tunnel_group/${setup.backend.id}`);
    expect(backend.body.tunnels).toEqual([
      { id: sessionId, uri: `${t.baseUrl}/tunnel_sessions/${sessionId}` },
    ]);
  });

  it('delivers agent commands from the API: restart gives a new session, update says why not', async () => {
    const setup = await tcpEdgeFor({ app: 'commands' });
    const agent = startTestAgent(edge, {
      authtoken: setup.token,
      labels: { app: 'commands' },
      forward: `http://127.0.0.1:${servicePort}`,
    });
    agents.push(agent);
    const first = await sessionOnline(agent);
    await eventually(
      () => t.api('GET', `/tunnel_sessions/${first}`),
      (response) => response.status === 200,
    );
    const update = await t.api('POST', `/tunnel_sessions/${first}/update`, {});
    expect(update.status).toBe(400);
    expect(update.body).toMatchObject({
      error_code: 'ERR_EDGEWARD_900',
      msg: 'id: update: no update available',
    });

    const next = sessionOnline(agent);
    const restart = await t.api('POST', `/tunnel_sessions/${first}/restart`, {});
    expect(restart.status, restart.text).toBe(204);
    const second = await next;
    expect(second).not.toBe(first);
    const listed = await eventually(
      () => t.api<{ tunnel_sessions: Array<{ id: string }> }>('GET', '/tunnel_sessions'),
      (response) => response.body.tunnel_sessions.some((session) => session.id === second),
    );
    expect(listed.body.tunnel_sessions.map((session) => session.id)).not.toContain(first);
  });

  it('delivers every byte of a download whose service closes first, while the client keeps its side open', async () => {
    const payload = Buffer.alloc(4 * 1024 * 1024, 7);
    const sender = net.createServer((socket) => {
      socket.on('error', () => {}); // the readiness probe (curl) hangs up early
      socket.end(payload);
    });
    sender.listen(0, '127.0.0.1');
    await once(sender, 'listening');
    try {
      const setup = await tcpEdgeFor({ app: 'download' });
      const agent = startTestAgent(edge, {
        authtoken: setup.token,
        labels: { app: 'download' },
        forward: `tcp://127.0.0.1:${(sender.address() as net.AddressInfo).port}`,
      });
      agents.push(agent);
      await sessionOnline(agent);
      await eventually(
        () => curl(setup.port),
        (result) => result.code !== 7,
      );
      const received: number[] = [];
      for (let round = 0; round < 4; round++) {
        const client = net.connect({ port: setup.port, host: '127.0.0.1', allowHalfOpen: true });
        // A slow reader: the service is done and closed long before the last bytes can move.
        client.pause();
        setTimeout(() => client.resume(), 200);
        let bytes = 0;
        client.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
        });
        await once(client, 'end');
        client.destroy();
        received.push(bytes);
      }
      expect(received).toEqual(Array(4).fill(payload.length));
    } finally {
      sender.close();
    }
  });

  it('refuses a token it does not know, and a bind the ACL does not allow', async () => {
    const setup = await tcpEdgeFor({ app: 'acl' }, ['bind:app=allowed']);
    const unknown = startTestAgent(edge, {
      authtoken: 'ewt_not_a_token',
      labels: { app: 'acl' },
      forward: 'tcp://127.0.0.1:1',
    });
    agents.push(unknown);
    const [unknownReason] = (await once(unknown, 'refused')) as [string];
    expect(unknownReason).toBe('the authtoken is unknown or was revoked');

    const outside = startTestAgent(edge, {
      authtoken: setup.token,
      labels: { app: 'acl' },
      forward: 'tcp://127.0.0.1:1',
    });
    agents.push(outside);
    const [aclReason] = (await once(outside, 'refused')) as [string];
    expect(aclReason).toBe("the credential's ACL does not allow bind app=acl");
  });

  it('applies an IP policy change within a second, and closes connections when no session is online', async () => {
    const setup = await tcpEdgeFor({ app: 'ip', env: 'policy' });
    const agent = startTestAgent(edge, {
      authtoken: setup.token,
      labels: { app: 'ip', env: 'policy' },
      forward: `http://127.0.0.1:${servicePort}`,
    });
    agents.push(agent);
    await sessionOnline(agent);
    expect(
      (
        await eventually(
          () => curl(setup.port),
          (result) => result.code === 0,
        )
      ).code,
    ).toBe(0);

    const policy = await create('/ip_policies', {});
    await create('/ip_policy_rules', { ip_policy_id: policy.id, cidr: '127.0.0.0/8', action: 'deny' });
    const patched = await t.api('PATCH', `/edges/tcp/${setup.tcpEdge.id}`, {
      ip_restriction: { ip_policy_ids: [policy.id] },
    });
    expect(patched.status, patched.text).toBe(200);
    const started = Date.now();
    const denied = await eventually(
      () => curl(setup.port),
      (result) => result.code !== 0,
      1000,
    );
    expect(denied.code, 'curl should fail: the connection is refused').not.toBe(0);
    expect(Date.now() - started).toBeLessThan(1000);

    // The deny rule deleted: allowed again.
    const rules = await t.api<{ ip_policy_rules: Array<{ id: string; ip_policy: { id: string } }> }>(
      'GET',
      '/ip_policy_rules',
    );
    for (const rule of rules.body.ip_policy_rules.filter(
      (candidate) => candidate.ip_policy.id === policy.id,
    )) {
      expect((await t.api('DELETE', `/ip_policy_rules/${rule.id}`)).status).toBe(204);
    }
    expect(
      (
        await eventually(
          () => curl(setup.port),
          (result) => result.code === 0,
          1000,
        )
      ).code,
    ).toBe(0);

    agent.stop();
    const closed = await eventually(
      () => curl(setup.port),
      (result) => result.code !== 0,
      2000,
    );
    expect(closed.code).not.toBe(0);
  });

  it('enforces the edge policy on each connection: a deny rule on conn.client_ip refuses, removing it lets in', async () => {
    const setup = await tcpEdgeFor({ app: 'cel', env: 'policy' });
    const agent = startTestAgent(edge, {
      authtoken: setup.token,
      labels: { app: 'cel', env: 'policy' },
      forward: `http://127.0.0.1:${servicePort}`,
    });
    agents.push(agent);
    await sessionOnline(agent);
    expect(
      (
        await eventually(
          () => curl(setup.port),
          (result) => result.code === 0,
        )
      ).code,
    ).toBe(0);

    const denied = await t.api('PUT', `/edges/tcp/${setup.tcpEdge.id}/policy`, {
      inbound: [
        { name: 'no loopback', expressions: ["conn.client_ip == '127.0.0.1'"], actions: [{ type: 'deny' }] },
      ],
    });
    expect(denied.status, denied.text).toBe(200);
    const refused = await eventually(
      () => curl(setup.port),
      (result) => result.code !== 0,
      1000,
    );
    expect(refused.code, 'curl should fail: the policy refuses the connection').not.toBe(0);

    // A rule whose expression does not match lets the connection through.
    const other = await t.api('PUT', `/edges/tcp/${setup.tcpEdge.id}/policy`, {
      inbound: [
        { name: 'someone else', expressions: ["conn.client_ip == '192.0.2.1'"], actions: [{ type: 'deny' }] },
      ],
    });
    expect(other.status, other.text).toBe(200);
    expect(
      (
        await eventually(
          () => curl(setup.port),
          (result) => result.code === 0,
          1000,
        )
      ).code,
    ).toBe(0);
  });

  it('ends the sessions of a deleted credential within a second, and the API stops listing them', async () => {
    const setup = await tcpEdgeFor({ app: 'revoked' });
    const agent = startTestAgent(edge, {
      authtoken: setup.token,
      labels: { app: 'revoked' },
      forward: `http://127.0.0.1:${servicePort}`,
    });
    agents.push(agent);
    const sessionId = await sessionOnline(agent);
    await eventually(
      () => t.api('GET', `/tunnel_sessions/${sessionId}`),
      (response) => response.status === 200,
    );
    const disconnected = once(agent, 'disconnected');
    const started = Date.now();
    expect((await t.api('DELETE', `/credentials/${setup.credential.id}`)).status).toBe(204);
    await disconnected;
    expect(Date.now() - started).toBeLessThan(1000);
    const gone = await eventually(
      () => t.api('GET', `/tunnel_sessions/${sessionId}`),
      (response) => response.status === 404,
    );
    expect(gone.status).toBe(404);
    // The agent retries and is refused: the token no longer exists.
    const [reason] = (await once(agent, 'refused')) as [string];
    expect(reason).toBe('the authtoken is unknown or was revoked');
  });
});
