import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { startTestAgent, startTestEdge, type TestEdge } from '../support/edge.js';
import { eventually } from '../support/eventually.js';
import { OpensslWorkspace } from '../support/openssl.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * TLS edges through the whole data plane: configured through the API, served by the edge's SNI
 * listener, carried by our agent; curl and openssl s_client as the public clients.
 */
const run = promisify(execFile);

let t: TestServer;
let edge: TestEdge;
let ssl: OpensslWorkspace;
let service: HttpServer;
let servicePort: number;
let upstream: HttpsServer;
let upstreamPort: number;
let upstreamCa: string;
const agents: Agent[] = [];

beforeAll(async () => {
  t = await startTestServer();
  edge = await startTestEdge(t, { tls: true });
  ssl = new OpensslWorkspace();
  service = createHttpServer((request, response) => response.end(`plain service: ${request.url}`));
  service.listen(0, '127.0.0.1');
  await once(service, 'listening');
  servicePort = (service.address() as AddressInfo).port;
  // The upstream of a passthrough edge terminates TLS itself, with a certificate the edge never has.
  const pair = ssl.caAndLeaf('passthrough.tls.test');
  upstreamCa = pair.ca.path;
  upstream = createHttpsServer({ cert: pair.leaf.pem, key: pair.leaf.key.pem }, (_request, response) =>
    response.end('the upstream terminated TLS'),
  );
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  upstreamPort = (upstream.address() as AddressInfo).port;
});

afterEach(() => {
  for (const agent of agents.splice(0)) agent.stop();
});

afterAll(async () => {
  await edge?.stop();
  service?.close();
  upstream?.close();
  await t?.stop();
  ssl?.cleanup();
});

async function create(path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await t.api('POST', path, body);
  expect(response.status, `${path}: ${response.text}`).toBe(201);
  return response.body;
}

/** A TLS edge for `host` with `modules`, and an agent of its backend forwarding to `forward`. */
async function tlsEdge(host: string, modules: Record<string, unknown>, forward: string) {
  const credential = await create('/credentials', {});
  const backend = await create('/backends/tunnel_group', { labels: { tls: host } });
  const tls = await create('/edges/tls', {
    hostports: [`${host}:443`],
    backend: { backend_id: backend.id },
    ...modules,
  });
  const agent = startTestAgent(edge, { authtoken: String(credential.token), labels: { tls: host }, forward });
  agents.push(agent);
  await once(agent, 'session');
  return tls;
}

async function curl(host: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const port = edge.edge.tlsPort;
  try {
    const { stdout, stderr } = await run('curl', [
      '-sS',
      '--max-time',
      '5',
      '--resolve',
      `${host}:${port}:127.0.0.1`,
      ...args,
      `https://${host}:${port}/hello`,
    ]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failure.code ?? -1, stdout: failure.stdout ?? '', stderr: failure.stderr ?? '' };
  }
}

describe('TLS edges', () => {
  it('terminates with the uploaded certificate that covers the name', async () => {
    const { ca, leaf } = ssl.caAndLeaf('uploaded.tls.test');
    await create('/tls_certificates', { certificate_pem: leaf.pem, private_key_pem: leaf.key.pem });
    await tlsEdge('uploaded.tls.test', {}, `http://127.0.0.1:${servicePort}`);
    const answer = await eventually(
      () => curl('uploaded.tls.test', ['--cacert', ca.path]),
      (result) => result.code === 0,
    );
    expect(answer).toMatchObject({ code: 0, stdout: 'plain service: /hello' });
  });

  it('generates a certificate for a name no uploaded one covers, and says whose it is', async () => {
    await tlsEdge('generated.tls.test', {}, `http://127.0.0.1:${servicePort}`);
    const { stdout } = await run('sh', [
      '-c',
      `echo | openssl s_client -connect 127.0.0.1:${edge.edge.tlsPort} -servername generated.tls.test 2>/dev/null | openssl x509 -noout -subject -ext subjectAltName`,
    ]);
    expect(stdout).toMatch(/CN ?= ?generated\.tls\.test/);
    expect(stdout).toContain('DNS:generated.tls.test');
    expect((await curl('generated.tls.test', ['-k'])).stdout).toBe('plain service: /hello');
  });

  it('passes TLS through untouched to an upstream that terminates it (terminate_at upstream)', async () => {
    await tlsEdge(
      'passthrough.tls.test',
      { tls_termination: { terminate_at: 'upstream' } },
      `tcp://127.0.0.1:${upstreamPort}`,
    );
    const answer = await eventually(
      () => curl('passthrough.tls.test', ['--cacert', upstreamCa]),
      (result) => result.code === 0,
    );
    expect(answer.stdout).toBe('the upstream terminated TLS');
  });

  it('requires a client certificate from the edge’s certificate authorities (mutual_tls)', async () => {
    const clientCa = ssl.caAndLeaf('client.tls.test', 'client CA');
    const otherCa = ssl.caAndLeaf('client.tls.test', 'another CA');
    const authority = await create('/certificate_authorities', { ca_pem: clientCa.ca.pem });
    await tlsEdge(
      'mtls.tls.test',
      { mutual_tls: { certificate_authority_ids: [authority.id] } },
      `http://127.0.0.1:${servicePort}`,
    );
    const withCert = await eventually(
      () => curl('mtls.tls.test', ['-k', '--cert', clientCa.leaf.path, '--key', clientCa.leaf.key.path]),
      (result) => result.code === 0,
    );
    expect(withCert.stdout).toBe('plain service: /hello');
    expect((await curl('mtls.tls.test', ['-k'])).code).not.toBe(0);
    expect(
      (await curl('mtls.tls.test', ['-k', '--cert', otherCa.leaf.path, '--key', otherCa.leaf.key.path])).code,
    ).not.toBe(0);
  });

  it('honours min_version and refuses clients an IP policy denies', async () => {
    const tls = await tlsEdge(
      'strict.tls.test',
      { tls_termination: { terminate_at: 'edge', min_version: '1.3' } },
      `http://127.0.0.1:${servicePort}`,
    );
    expect(
      (
        await eventually(
          () => curl('strict.tls.test', ['-k', '--tlsv1.3']),
          (r) => r.code === 0,
        )
      ).code,
    ).toBe(0);
    expect((await curl('strict.tls.test', ['-k', '--tls-max', '1.2'])).code).not.toBe(0);

    const policy = await create('/ip_policies', {});
    await create('/ip_policy_rules', { ip_policy_id: policy.id, cidr: '127.0.0.1/32', action: 'deny' });
    expect(
      (await t.api('PATCH', `/edges/tls/${tls.id}`, { ip_restriction: { ip_policy_ids: [policy.id] } }))
        .status,
    ).toBe(200);
    const denied = await eventually(
      () => curl('strict.tls.test', ['-k']),
      (result) => result.code !== 0,
      1000,
    );
    expect(denied.code).not.toBe(0);
  });

  it('closes a name no TLS edge serves', async () => {
    expect((await curl('nobody.tls.test', ['-k'])).code).not.toBe(0);
  });
});
